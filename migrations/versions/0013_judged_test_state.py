"""judged_tests.state: what each judged (pair, test) carries to the next judgement (its
running baseline, its newest samples), so a sweep is judged from its new results alone.

Nullable: rows stored before it have none and are seeded from history by their next sweep's
judgement (app/judging/load.py). The `baselines` table is no longer written (the baseline
lives in the state); it is left in place, and its rows are no longer read.

Revision ID: 0013
Revises: 0012
"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa


revision: str = '0013'
down_revision: Union[str, Sequence[str], None] = '0012'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    with op.batch_alter_table('judged_tests') as batch:
        batch.add_column(sa.Column('state', sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('judged_tests') as batch:
        batch.drop_column('state')
