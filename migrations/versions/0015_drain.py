"""peerwatch drain: its actions, the nodes it owns (marks) and its circuit breaker.

Revision ID: 0015
Revises: 0014
"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision: str = '0015'
down_revision: Union[str, Sequence[str], None] = '0014'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

TS = sa.DateTime(timezone=True)
BIG_ID = sa.BigInteger().with_variant(sa.Integer(), 'sqlite')


def upgrade() -> None:
    """Upgrade schema."""
    op.create_table(
        'drain_actions',
        sa.Column('id', BIG_ID, nullable=False),
        sa.Column('at', TS, nullable=False),
        sa.Column('host', sa.String(length=253), nullable=True),
        sa.Column('scheduler', sa.String(length=32), nullable=False),
        sa.Column('kind', sa.String(length=32), nullable=False),
        sa.Column('mode', sa.String(length=16), nullable=False),
        sa.Column('reason', sa.Text(), nullable=False),
        sa.Column('actor', sa.String(length=128), nullable=False),
        sa.Column('details', sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_drain_actions')),
    )
    op.create_index(op.f('ix_drain_actions_host_at'), 'drain_actions', ['host', 'at'])
    op.create_index(op.f('ix_drain_actions_scheduler_kind_at'), 'drain_actions',
                    ['scheduler', 'kind', 'at'])
    op.create_table(
        'drain_marks',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('scheduler', sa.String(length=32), nullable=False),
        sa.Column('host', sa.String(length=253), nullable=False),
        sa.Column('taken_out_at', TS, nullable=False),
        sa.Column('reason', sa.Text(), nullable=False),
        sa.Column('applied', sa.Boolean(), nullable=False),
        sa.Column('clear_since', TS, nullable=True),
        sa.Column('action_id', sa.Integer(), nullable=True),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_drain_marks')),
        sa.UniqueConstraint('scheduler', 'host', name=op.f('uq_drain_marks_scheduler_host')),
    )
    op.create_table(
        'drain_breakers',
        sa.Column('scheduler', sa.String(length=32), nullable=False),
        sa.Column('open', sa.Boolean(), nullable=False),
        sa.Column('mode', sa.String(length=16), nullable=False),
        sa.Column('opened_at', TS, nullable=True),
        sa.Column('reason', sa.Text(), nullable=False),
        sa.Column('reset_by', sa.String(length=128), nullable=True),
        sa.Column('reset_at', TS, nullable=True),
        sa.PrimaryKeyConstraint('scheduler', name=op.f('pk_drain_breakers')),
    )


def downgrade() -> None:
    """Downgrade schema."""
    op.drop_table('drain_breakers')
    op.drop_table('drain_marks')
    op.drop_index(op.f('ix_drain_actions_scheduler_kind_at'), table_name='drain_actions')
    op.drop_index(op.f('ix_drain_actions_host_at'), table_name='drain_actions')
    op.drop_table('drain_actions')
