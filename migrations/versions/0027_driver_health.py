"""The driver's own verdicts: each GPU's recovery action, ECC, row remapping and retired pages
(`gpus.driver`), the host's IMEX state (`host_runtime.imex`) and the PCIe AER totals of each
GPU sample (`gpu_samples.aer_*`), judged by their rate.

Revision ID: 0027
Revises: 0026
"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa

revision: str = '0027'
down_revision: Union[str, Sequence[str], None] = '0026'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

AER = ('aer_correctable', 'aer_nonfatal', 'aer_fatal')


def upgrade() -> None:
    with op.batch_alter_table('gpus') as batch:
        batch.add_column(sa.Column('driver', sa.JSON(), nullable=True))
    with op.batch_alter_table('host_runtime') as batch:
        batch.add_column(sa.Column('imex', sa.JSON(), nullable=True))
    with op.batch_alter_table('gpu_samples') as batch:
        for name in AER:
            batch.add_column(sa.Column(name, sa.BigInteger(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('gpu_samples') as batch:
        for name in reversed(AER):
            batch.drop_column(name)
    with op.batch_alter_table('host_runtime') as batch:
        batch.drop_column('imex')
    with op.batch_alter_table('gpus') as batch:
        batch.drop_column('driver')
