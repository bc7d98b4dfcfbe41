"""received_reports: reports answered and not yet expanded into rows: the POST
answers once the checked body is stored; an ingest worker expands it after.

Revision ID: 0023
Revises: 0022
"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision: str = '0023'
down_revision: Union[str, Sequence[str], None] = '0022'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

TS = sa.DateTime(timezone=True)
BIG_ID = sa.BigInteger().with_variant(sa.Integer(), 'sqlite')


def upgrade() -> None:
    """Upgrade schema."""
    op.create_table(
        'received_reports',
        sa.Column('id', BIG_ID, nullable=False),
        sa.Column('report_id', sa.Uuid(), nullable=False),
        sa.Column('host', sa.String(length=253), nullable=False),
        sa.Column('digest', sa.String(length=64), nullable=False),
        sa.Column('received_at', TS, nullable=False),
        sa.Column('sent_at', TS, nullable=True),
        sa.Column('canonical', sa.Boolean(), nullable=False),
        sa.Column('encoding', sa.String(length=16), nullable=True),
        sa.Column('body', sa.LargeBinary(), nullable=False),
        sa.Column('attempts', sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_received_reports')),
        sa.UniqueConstraint('report_id', name=op.f('uq_received_reports_report_id')),
    )
    op.create_index(op.f('ix_received_reports_received_at'), 'received_reports',
                    ['received_at'])


def downgrade() -> None:
    """Downgrade schema."""
    op.drop_index(op.f('ix_received_reports_received_at'), table_name='received_reports')
    op.drop_table('received_reports')
