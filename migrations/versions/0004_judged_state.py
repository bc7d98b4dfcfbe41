"""Judged state: the stored verdict of every host, GPU, link, pair and (pair, test); the
server-clock receive time and clock skew of each host.

Revision ID: 0004
Revises: 0003
"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision: str = '0004'
down_revision: Union[str, Sequence[str], None] = '0003'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

TS = sa.DateTime(timezone=True)


def _judged(name: str, keys: list[sa.Column], *extra: sa.Column) -> None:
    op.create_table(
        name,
        sa.Column('host_id', sa.Integer(), nullable=False),
        *keys,
        sa.Column('verdict', sa.String(length=16), nullable=False),
        sa.Column('reason', sa.Text(), nullable=False),
        sa.Column('since', TS, nullable=False),
        sa.Column('judged_at', TS, nullable=False),
        sa.Column('facts', sa.JSON(), nullable=False),
        *extra,
        sa.ForeignKeyConstraint(['host_id'], ['hosts.id'], name=op.f(f'fk_{name}_host_id_hosts'),
                                ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('host_id', *[k.name for k in keys], name=op.f(f'pk_{name}')),
    )


def upgrade() -> None:
    """Upgrade schema."""
    with op.batch_alter_table('hosts', schema=None) as batch_op:
        batch_op.add_column(sa.Column('last_received_at', TS, nullable=True))
        batch_op.add_column(sa.Column('clock_skew_s', sa.Float(), nullable=True))
        batch_op.add_column(sa.Column('inventory_changed_at', TS, nullable=True))
        batch_op.add_column(sa.Column('error_total', sa.BigInteger(), nullable=True))
    _judged('judged_hosts', [],
            sa.Column('stale', sa.Boolean(), nullable=False),
            sa.Column('gpus_total', sa.Integer(), nullable=False),
            sa.Column('gpus_healthy', sa.Integer(), nullable=False),
            sa.Column('worst_src', sa.Integer(), nullable=True),
            sa.Column('worst_dst', sa.Integer(), nullable=True),
            sa.Column('worst_test', sa.String(length=16), nullable=True),
            sa.Column('worst_ratio', sa.Float(), nullable=True))
    _judged('judged_gpus', [sa.Column('gpu', sa.Integer(), nullable=False)])
    _judged('judged_links', [sa.Column('gpu', sa.Integer(), nullable=False),
                             sa.Column('link', sa.Integer(), nullable=False)])
    _judged('judged_pairs', [sa.Column('src', sa.Integer(), nullable=False),
                             sa.Column('dst', sa.Integer(), nullable=False)])
    _judged('judged_tests', [sa.Column('test', sa.String(length=16), nullable=False),
                             sa.Column('src', sa.Integer(), nullable=False),
                             sa.Column('dst', sa.Integer(), nullable=False)],
            sa.Column('value', sa.Float(), nullable=True),
            sa.Column('value_at', TS, nullable=True),
            sa.Column('ratio_expected', sa.Float(), nullable=True),
            sa.Column('ratio_baseline', sa.Float(), nullable=True),
            sa.Column('low_since', TS, nullable=True),
            sa.Column('expected', sa.Float(), nullable=True),
            sa.Column('expected_basis', sa.Text(), nullable=True),
            sa.Column('baseline', sa.Float(), nullable=True),
            sa.Column('latest_at', TS, nullable=True),
            sa.Column('latest_value', sa.Float(), nullable=True),
            sa.Column('latest_contended', sa.Boolean(), nullable=False),
            sa.Column('latest_foreign_bytes', sa.BigInteger(), nullable=False),
            sa.Column('latest_error', sa.Text(), nullable=True))


def downgrade() -> None:
    """Downgrade schema."""
    for name in ('judged_tests', 'judged_pairs', 'judged_links', 'judged_gpus', 'judged_hosts'):
        op.drop_table(name)
    with op.batch_alter_table('hosts', schema=None) as batch_op:
        batch_op.drop_column('error_total')
        batch_op.drop_column('inventory_changed_at')
        batch_op.drop_column('clock_skew_s')
        batch_op.drop_column('last_received_at')
