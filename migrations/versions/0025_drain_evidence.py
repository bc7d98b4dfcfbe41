"""Complete evidence before a return: each host's GPU evidence (the NVIDIA PCI functions and
the GPUs its agent saw since boot) and when its newest full sweep arrived; the drain
breaker's cause (a limit, or peerwatch's state lost) and a row for every scheduler peerwatch
has acted on, so that a server without one knows its drain state is gone.

Revision ID: 0025
Revises: 0024
"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa

revision: str = '0025'
down_revision: Union[str, Sequence[str], None] = '0024'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    with op.batch_alter_table('host_runtime') as batch:
        batch.add_column(sa.Column('gpu_evidence', sa.JSON(), nullable=True))
    with op.batch_alter_table('hosts') as batch:
        batch.add_column(sa.Column('full_sweep_at', TS, nullable=True))
    with op.batch_alter_table('drain_breakers') as batch:
        batch.add_column(sa.Column('cause', sa.String(length=32), nullable=True))
    _backfill_breakers()


def _backfill_breakers() -> None:
    """A closed breaker for every scheduler with actions but no breaker row yet (the row
    used to appear only at the first trip): its drain state is known, not lost."""
    actions = sa.table('drain_actions', sa.column('scheduler', sa.String))
    breakers = sa.table('drain_breakers', sa.column('scheduler', sa.String),
                        sa.column('open', sa.Boolean), sa.column('mode', sa.String),
                        sa.column('reason', sa.Text))
    bind = op.get_bind()
    have = {r[0] for r in bind.execute(sa.select(breakers.c.scheduler))}
    acted = {r[0] for r in bind.execute(sa.select(actions.c.scheduler).distinct())}
    rows = [{'scheduler': s, 'open': False, 'mode': 'act', 'reason': ''}
            for s in sorted(acted - have)]
    if rows:
        op.bulk_insert(breakers, rows)


def downgrade() -> None:
    with op.batch_alter_table('drain_breakers', recreate='never') as batch:
        batch.drop_column('cause')
    # never the copy-and-rename of SQLite's batch mode for hosts: it would cascade
    with op.batch_alter_table('hosts', recreate='never') as batch:
        batch.drop_column('full_sweep_at')
    with op.batch_alter_table('host_runtime', recreate='never') as batch:
        batch.drop_column('gpu_evidence')
