"""network_hosts, host_pair_results, pair_jobs: cross-host tests run by the scheduler
(docs/network.md).

Revision ID: 0032
Revises: 0031
"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision: str = '0032'
down_revision: Union[str, Sequence[str], None] = '0031'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

TS = sa.DateTime(timezone=True)
BIG_ID = sa.BigInteger().with_variant(sa.Integer(), 'sqlite')


def upgrade() -> None:
    """Upgrade schema."""
    op.create_table(
        'network_hosts',
        sa.Column('host', sa.String(length=253), nullable=False),
        sa.Column('leaf', sa.String(length=128), nullable=False),
        sa.Column('spine', sa.String(length=128), nullable=True),
        sa.Column('domain', sa.String(length=128), nullable=True),
        sa.Column('line_rate_bps', sa.Float(), nullable=False),
        sa.Column('updated_at', TS, nullable=False),
        sa.PrimaryKeyConstraint('host', name=op.f('pk_network_hosts')),
    )
    op.create_table(
        'host_pair_results',
        sa.Column('id', BIG_ID, nullable=False),
        sa.Column('host', sa.String(length=253), nullable=False),
        sa.Column('peer_host', sa.String(length=253), nullable=False),
        sa.Column('test', sa.String(length=32), nullable=False),
        sa.Column('src', sa.Integer(), nullable=False),
        sa.Column('dst', sa.Integer(), nullable=False),
        sa.Column('value', sa.Float(), nullable=True),
        sa.Column('error', sa.Text(), nullable=True),
        sa.Column('job', sa.String(length=128), nullable=True),
        sa.Column('line_rate_bps', sa.Float(), nullable=True),
        sa.Column('measured_at', TS, nullable=False),
        sa.Column('received_at', TS, nullable=False),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_host_pair_results')),
    )
    op.create_index(op.f('ix_host_pair_results_host_peer_host_test_measured_at'),
                    'host_pair_results', ['host', 'peer_host', 'test', 'measured_at'])
    op.create_index(op.f('ix_host_pair_results_measured_at'), 'host_pair_results',
                    ['measured_at'])
    op.create_table(
        'pair_jobs',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('host', sa.String(length=253), nullable=False),
        sa.Column('peer_host', sa.String(length=253), nullable=False),
        sa.Column('scheduler', sa.String(length=32), nullable=False),
        sa.Column('scheduler_job', sa.String(length=128), nullable=True),
        sa.Column('state', sa.String(length=16), nullable=False),
        sa.Column('reason', sa.Text(), nullable=False),
        sa.Column('ranks', sa.JSON(), nullable=False),
        sa.Column('created_at', TS, nullable=False),
        sa.Column('updated_at', TS, nullable=False),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_pair_jobs')),
    )
    op.create_index(op.f('ix_pair_jobs_state'), 'pair_jobs', ['state'])
    op.create_index(op.f('ix_pair_jobs_host_peer_host'), 'pair_jobs', ['host', 'peer_host'])


def downgrade() -> None:
    """Downgrade schema."""
    op.drop_table('pair_jobs')
    op.drop_table('host_pair_results')
    op.drop_table('network_hosts')
