"""Hosts keep when their probe was last heard at all: the arrival of its newest request,
stored, refused, still waiting for a slot, or given up on by a probe that timed out. Under
overload a report can take longer to store than the staleness limit, and a probe whose
requests time out before they are stored sent nothing the server kept; either was heard.

Revision ID: 0020
Revises: 0019
"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa

revision: str = '0020'
down_revision: Union[str, Sequence[str], None] = '0019'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    with op.batch_alter_table('hosts') as batch:
        batch.add_column(sa.Column('last_heard_at', sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    # never the copy-and-rename of SQLite's batch mode: dropping the old hosts table would
    # cascade to every row that references a host (SQLite 3.35+ drops a column in place)
    with op.batch_alter_table('hosts', recreate='never') as batch:
        batch.drop_column('last_heard_at')
