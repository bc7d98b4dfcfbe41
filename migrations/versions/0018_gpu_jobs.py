"""Which job held which GPU: spans of (host, GPU, job) from the reports.

Revision ID: 0018
Revises: 0017
"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision: str = '0018'
down_revision: Union[str, Sequence[str], None] = '0017'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

TS = sa.DateTime(timezone=True)
BIG_ID = sa.BigInteger().with_variant(sa.Integer(), 'sqlite')


def upgrade() -> None:
    """Upgrade schema."""
    op.create_table(
        'gpu_jobs',
        sa.Column('id', BIG_ID, nullable=False),
        sa.Column('host_id', sa.Integer(), nullable=False),
        sa.Column('gpu', sa.Integer(), nullable=False),
        sa.Column('job', sa.String(length=128), nullable=False),
        sa.Column('source', sa.String(length=16), nullable=False),
        sa.Column('first_seen', TS, nullable=False),
        sa.Column('last_seen', TS, nullable=False),
        sa.ForeignKeyConstraint(['host_id'], ['hosts.id'], name=op.f('fk_gpu_jobs_host_id_hosts'),
                                ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_gpu_jobs')),
        sa.UniqueConstraint('host_id', 'gpu', 'job', name=op.f('uq_gpu_jobs_host_id_gpu_job')),
    )
    op.create_index(op.f('ix_gpu_jobs_job'), 'gpu_jobs', ['job'])
    op.create_index(op.f('ix_gpu_jobs_host_id_last_seen'), 'gpu_jobs', ['host_id', 'last_seen'])


def downgrade() -> None:
    """Downgrade schema."""
    op.drop_index(op.f('ix_gpu_jobs_host_id_last_seen'), table_name='gpu_jobs')
    op.drop_index(op.f('ix_gpu_jobs_job'), table_name='gpu_jobs')
    op.drop_table('gpu_jobs')
