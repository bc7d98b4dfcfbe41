"""Alerts: acknowledgement, Alertmanager delivery state, one active row per fingerprint.

Revision ID: 0003
Revises: 0002
"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision: str = '0003'
down_revision: Union[str, Sequence[str], None] = '0002'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

ACTIVE = sa.text("state IN ('pending', 'firing')")


def upgrade() -> None:
    """Upgrade schema."""
    with op.batch_alter_table('alerts', schema=None) as batch_op:
        batch_op.add_column(sa.Column('acked_by', sa.String(length=128), nullable=True))
        batch_op.add_column(sa.Column('acked_at', sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column('notified_state', sa.String(length=16), nullable=True))
        batch_op.add_column(sa.Column('notified_at', sa.DateTime(timezone=True), nullable=True))
        batch_op.create_index('uq_alerts_active_fingerprint', ['fingerprint'], unique=True,
                              postgresql_where=ACTIVE, sqlite_where=ACTIVE)


def downgrade() -> None:
    """Downgrade schema."""
    with op.batch_alter_table('alerts', schema=None) as batch_op:
        batch_op.drop_index('uq_alerts_active_fingerprint')
        batch_op.drop_column('notified_at')
        batch_op.drop_column('notified_state')
        batch_op.drop_column('acked_at')
        batch_op.drop_column('acked_by')
