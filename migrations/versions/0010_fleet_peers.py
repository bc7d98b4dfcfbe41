"""Fleet peer statistics: per (GPU model, topology class, driver, test) the fleet's median and
low percentile of the newest healthy judged values, so a host is judged against its peers;
and on each host, when the stats of its groups last changed (what re-judges it).

Revision ID: 0010
Revises: 0007
"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision: str = '0010'
down_revision: Union[str, Sequence[str], None] = '0009'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    """Upgrade schema."""
    with op.batch_alter_table('hosts') as batch:
        batch.add_column(sa.Column('peers_changed_at', TS, nullable=True))
    op.create_table(
        'fleet_peer_stats',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('gpu_model', sa.String(length=128), nullable=False),
        sa.Column('topology', sa.String(length=32), nullable=False),
        sa.Column('driver', sa.String(length=64), nullable=False),
        sa.Column('test', sa.String(length=16), nullable=False),
        sa.Column('hosts', sa.Integer(), nullable=False),
        sa.Column('pairs', sa.Integer(), nullable=False),
        sa.Column('median', sa.Float(), nullable=True),
        sa.Column('low', sa.Float(), nullable=True),
        sa.Column('ref_median', sa.Float(), nullable=True),
        sa.Column('computed_at', TS, nullable=False),
        sa.Column('changed_at', TS, nullable=False),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_fleet_peer_stats')),
        sa.UniqueConstraint('gpu_model', 'topology', 'driver', 'test',
                            name=op.f('uq_fleet_peer_stats_gpu_model_topology_driver_test')),
    )
    op.create_index(op.f('ix_fleet_peer_stats_gpu_model_driver'), 'fleet_peer_stats',
                    ['gpu_model', 'driver'], unique=False)


def downgrade() -> None:
    """Downgrade schema."""
    op.drop_index(op.f('ix_fleet_peer_stats_gpu_model_driver'), table_name='fleet_peer_stats')
    op.drop_table('fleet_peer_stats')
    with op.batch_alter_table('hosts') as batch:
        batch.drop_column('peers_changed_at')
