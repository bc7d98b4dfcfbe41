"""Xid/SXid events, stored with the report that carried them.

Revision ID: 0016
Revises: 0015
"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision: str = '0016'
down_revision: Union[str, Sequence[str], None] = '0015'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

TS = sa.DateTime(timezone=True)
BIG_ID = sa.BigInteger().with_variant(sa.Integer(), 'sqlite')


def upgrade() -> None:
    """Upgrade schema."""
    op.create_table(
        'fabric_events',
        sa.Column('id', BIG_ID, nullable=False),
        sa.Column('report_id', BIG_ID, nullable=False),
        sa.Column('host_id', sa.Integer(), nullable=False),
        sa.Column('at', TS, nullable=False),
        sa.Column('kind', sa.String(length=8), nullable=False),
        sa.Column('code', sa.Integer(), nullable=False),
        sa.Column('gpu', sa.Integer(), nullable=True),
        sa.Column('link', sa.Integer(), nullable=True),
        sa.Column('switch', sa.String(length=32), nullable=True),
        sa.Column('pci_bus_id', sa.String(length=32), nullable=True),
        sa.Column('subcode', sa.Integer(), nullable=True),
        sa.Column('fatal', sa.Boolean(), nullable=True),
        sa.Column('count', sa.Integer(), nullable=False),
        sa.Column('sources', sa.String(length=64), nullable=False),
        sa.Column('message', sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(['host_id'], ['hosts.id'],
                                name=op.f('fk_fabric_events_host_id_hosts'), ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['report_id'], ['reports.id'],
                                name=op.f('fk_fabric_events_report_id_reports'),
                                ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_fabric_events')),
    )
    op.create_index(op.f('ix_fabric_events_host_id_at'), 'fabric_events', ['host_id', 'at'])
    op.create_index(op.f('ix_fabric_events_at'), 'fabric_events', ['at'])
    op.create_index(op.f('ix_fabric_events_report_id'), 'fabric_events', ['report_id'])


def downgrade() -> None:
    """Downgrade schema."""
    op.drop_index(op.f('ix_fabric_events_report_id'), table_name='fabric_events')
    op.drop_index(op.f('ix_fabric_events_at'), table_name='fabric_events')
    op.drop_index(op.f('ix_fabric_events_host_id_at'), table_name='fabric_events')
    op.drop_table('fabric_events')
