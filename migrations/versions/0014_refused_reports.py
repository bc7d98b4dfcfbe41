"""Hosts keep what the server refused of them: when it last answered one of their reports
429/503, and how many it refused since it last stored one. A refused probe was heard from
(it raises no ProbeStale), and its host reads "server busy, N reports refused".

Revision ID: 0014
Revises: 0013
"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa

revision: str = '0014'
down_revision: Union[str, Sequence[str], None] = '0013'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    with op.batch_alter_table('hosts') as batch:
        batch.add_column(sa.Column('last_refused_at', sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column('refused_reports', sa.Integer(), nullable=False,
                                   server_default='0'))


def downgrade() -> None:
    with op.batch_alter_table('hosts') as batch:
        batch.drop_column('refused_reports')
        batch.drop_column('last_refused_at')
