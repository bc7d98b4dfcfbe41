"""Maintenance windows (no pages inside them) and each host's probe start, driver load time
and Fabric Manager state (pages settle after a start; the fabric judge reads the manager).

Revision ID: 0005
Revises: 0004
"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision: str = '0005'
down_revision: Union[str, Sequence[str], None] = '0004'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    """Upgrade schema."""
    op.create_table(
        'maintenance_windows',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('host', sa.String(length=253), nullable=False),
        sa.Column('starts_at', TS, nullable=False),
        sa.Column('ends_at', TS, nullable=False),
        sa.Column('created_by', sa.String(length=128), nullable=False),
        sa.Column('comment', sa.Text(), nullable=False),
        sa.Column('created_at', TS, nullable=False),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_maintenance_windows')),
    )
    op.create_index(op.f('ix_maintenance_windows_host_ends_at'), 'maintenance_windows',
                    ['host', 'ends_at'], unique=False)
    op.create_table(
        'host_runtime',
        sa.Column('host_id', sa.Integer(), nullable=False),
        sa.Column('probe_started_at', TS, nullable=True),
        sa.Column('driver_loaded_at', TS, nullable=True),
        sa.Column('fabric_manager', sa.JSON(), nullable=True),
        sa.Column('updated_at', TS, nullable=False),
        sa.ForeignKeyConstraint(['host_id'], ['hosts.id'],
                                name=op.f('fk_host_runtime_host_id_hosts'), ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('host_id', name=op.f('pk_host_runtime')),
    )


def downgrade() -> None:
    """Downgrade schema."""
    op.drop_table('host_runtime')
    op.drop_index(op.f('ix_maintenance_windows_host_ends_at'), table_name='maintenance_windows')
    op.drop_table('maintenance_windows')
