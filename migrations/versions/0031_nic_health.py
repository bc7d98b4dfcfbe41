"""RDMA NICs (wire schema 5): each port's state, rate and counters per reading
(`nic_port_samples`, judged by the counters' rates) and the NIC inventory of each host's
newest report (`host_runtime.nics`).

Revision ID: 0031
Revises: 0029
"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa

revision: str = '0031'
down_revision: Union[str, Sequence[str], None] = '0029'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

TS = sa.DateTime(timezone=True)
BIG_ID = sa.BigInteger().with_variant(sa.Integer(), 'sqlite')


def upgrade() -> None:
    # report_id names the report without a key to it: reports are partitioned by time (0029),
    # and each table expires by its own time, never by a cascade
    op.create_table(
        'nic_port_samples',
        sa.Column('id', BIG_ID, nullable=False),
        sa.Column('report_id', BIG_ID, nullable=False),
        sa.Column('host_id', sa.Integer(), nullable=False),
        sa.Column('at', TS, nullable=False),
        sa.Column('device', sa.String(length=64), nullable=False),
        sa.Column('port', sa.Integer(), nullable=False),
        sa.Column('state', sa.String(length=32), nullable=True),
        sa.Column('phys_state', sa.String(length=32), nullable=True),
        sa.Column('rate_gbps', sa.Float(), nullable=True),
        sa.Column('link_layer', sa.String(length=32), nullable=True),
        sa.Column('counters', sa.JSON(), nullable=False),
        sa.Column('hw_counters', sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(['host_id'], ['hosts.id'],
                                name=op.f('fk_nic_port_samples_host_id_hosts'),
                                ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_nic_port_samples')),
    )
    op.create_index(op.f('ix_nic_port_samples_host_id_at'), 'nic_port_samples',
                    ['host_id', 'at'])
    with op.batch_alter_table('host_runtime') as batch:
        batch.add_column(sa.Column('nics', sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('host_runtime') as batch:
        batch.drop_column('nics')
    op.drop_index(op.f('ix_nic_port_samples_host_id_at'), table_name='nic_port_samples')
    op.drop_table('nic_port_samples')
