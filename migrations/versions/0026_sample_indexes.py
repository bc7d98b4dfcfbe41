"""link_samples and gpu_samples keep the one index their reads use, (host_id, at), and the
report_id one their parent's ON DELETE CASCADE probes: every read of them (the judge's
rates, the host span, rate_window_start, the link series, the newest GPU sample, the
throttle history) asks for one host's rows over a time range. The (host_id, gpu[, link],
at) indexes were over half of link_samples' index bytes, and the (at) ones served only
retention, which on PostgreSQL drops whole day partitions (SQLite, a small install's store,
deletes the old rows by scanning).

Revision ID: 0026
Revises: 0025
"""
from typing import Sequence, Union

from alembic import op


# revision identifiers, used by Alembic.
revision: str = '0026'
down_revision: Union[str, Sequence[str], None] = '0025'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

DROPPED = {
    "link_samples": {"ix_link_samples_host_id_gpu_link_at": ["host_id", "gpu", "link", "at"],
                     "ix_link_samples_at": ["at"]},
    "gpu_samples": {"ix_gpu_samples_host_id_gpu_at": ["host_id", "gpu", "at"],
                    "ix_gpu_samples_at": ["at"]},
}


def upgrade() -> None:
    """Upgrade schema."""
    for table, indexes in DROPPED.items():
        for name in indexes:
            op.drop_index(name, table_name=table)


def downgrade() -> None:
    """Downgrade schema."""
    for table, indexes in DROPPED.items():
        for name, columns in indexes.items():
            op.create_index(name, table, columns)
