"""hosts.events_stored_at: when ingest last stored Xid/SXid event rows for the host, so the
judgement fast path (app/judging/unchanged.py) knows a judgement made before it is stale
(without it a new Xid on a healthy, unchanged host was judged only at the next sweep).

Existing hosts start with none: their stored judgements already read every event stored.

Revision ID: 0021
Revises: 0020
"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision: str = '0021'
down_revision: Union[str, Sequence[str], None] = '0020'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    """Upgrade schema."""
    with op.batch_alter_table('hosts') as batch:
        batch.add_column(sa.Column('events_stored_at', TS, nullable=True))


def downgrade() -> None:
    """Downgrade schema. A plain DROP COLUMN (SQLite 3.35+ has it), not a batch: a batch
    rebuilds `hosts` on SQLite, and dropping the old table there cascades to every row that
    references a host (reports, judged rows) under the app's `PRAGMA foreign_keys=ON`."""
    op.drop_column('hosts', 'events_stored_at')
