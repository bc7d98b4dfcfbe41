"""drain_leases: the one `peerwatch drain` controller that acts on a scheduler without a
lease of its own (Slurm); the others observe until it lapses.

Revision ID: 0024
Revises: 0023
"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision: str = '0024'
down_revision: Union[str, Sequence[str], None] = '0023'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    """Upgrade schema."""
    op.create_table(
        'drain_leases',
        sa.Column('scheduler', sa.String(length=32), nullable=False),
        sa.Column('holder', sa.String(length=128), nullable=False),
        sa.Column('acquired_at', TS, nullable=False),
        sa.Column('expires_at', TS, nullable=False),
        sa.PrimaryKeyConstraint('scheduler', name=op.f('pk_drain_leases')),
    )


def downgrade() -> None:
    """Downgrade schema."""
    op.drop_table('drain_leases')
