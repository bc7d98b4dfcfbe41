"""Job snapshots: a host's fabric state around a job (Slurm prolog/epilog), kept whole.

Revision ID: 0011
Revises: 0007
"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision: str = '0011'
down_revision: Union[str, Sequence[str], None] = '0010'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    """Upgrade schema."""
    op.create_table(
        'job_snapshots',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('snapshot_id', sa.Uuid(), nullable=False),
        sa.Column('host', sa.String(length=253), nullable=False),
        sa.Column('job_id', sa.String(length=64), nullable=True),
        sa.Column('phase', sa.String(length=16), nullable=False),
        sa.Column('taken_at', TS, nullable=False),
        sa.Column('received_at', TS, nullable=False),
        sa.Column('digest', sa.String(length=64), nullable=False),
        sa.Column('body', sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_job_snapshots')),
        sa.UniqueConstraint('snapshot_id', name=op.f('uq_job_snapshots_snapshot_id')),
    )
    op.create_index(op.f('ix_job_snapshots_host_taken_at'), 'job_snapshots',
                    ['host', 'taken_at'], unique=False)
    op.create_index(op.f('ix_job_snapshots_host_job_id'), 'job_snapshots',
                    ['host', 'job_id'], unique=False)
    op.create_index(op.f('ix_job_snapshots_taken_at'), 'job_snapshots', ['taken_at'],
                    unique=False)


def downgrade() -> None:
    """Downgrade schema."""
    op.drop_index(op.f('ix_job_snapshots_taken_at'), table_name='job_snapshots')
    op.drop_index(op.f('ix_job_snapshots_host_job_id'), table_name='job_snapshots')
    op.drop_index(op.f('ix_job_snapshots_host_taken_at'), table_name='job_snapshots')
    op.drop_table('job_snapshots')
