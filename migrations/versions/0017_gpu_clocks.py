"""GPU clocks around every sweep, and the results taken while a GPU was throttled.

gpu_samples gain the sample's clocks-event reasons (NVML's bit mask), its throttle (the
kinds "power", "thermal", "hw" of the sweep it belongs to: reasons at either end of the
sweep or a violation counter's rise between them, app/analysis/throttle.py) and the rest of
the clocks sample as JSON (SM clock, power, temperature, violation counters); measurements
gain the label of the throttled GPUs they touched ("GPU3 power-capped"). All nullable:
rows stored before, and probes that cannot read clocks, have none. RDMA readiness needs no
column: it lives in the GPU row's `rdma` JSON with the rest of the inventory.

Revision ID: 0017
Revises: 0016
"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa

revision: str = '0017'
down_revision: Union[str, Sequence[str], None] = '0016'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    with op.batch_alter_table('gpu_samples') as batch:
        batch.add_column(sa.Column('clock_reasons', sa.BigInteger(), nullable=True))
        batch.add_column(sa.Column('throttle', sa.String(length=32), nullable=True))
        batch.add_column(sa.Column('clocks', sa.JSON(), nullable=True))
    with op.batch_alter_table('measurements') as batch:
        batch.add_column(sa.Column('throttle', sa.String(length=200), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('measurements') as batch:
        batch.drop_column('throttle')
    with op.batch_alter_table('gpu_samples') as batch:
        batch.drop_column('clocks')
        batch.drop_column('throttle')
        batch.drop_column('clock_reasons')
