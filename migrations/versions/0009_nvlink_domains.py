"""GPUs keep their NVLink domain (the fabric's cluster UUID), indexed: rack-scale domains
(GB200 NVL72) are read by it. Existing rows get it from their stored `switch_fabric`.

Revision ID: 0009
Revises: 0007
"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa

from peerwatch.app.analysis.domains import domain_key

revision: str = '0009'
down_revision: Union[str, Sequence[str], None] = '0007'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    with op.batch_alter_table('gpus') as batch:
        batch.add_column(sa.Column('nvlink_domain', sa.String(length=32), nullable=True))
        batch.create_index(batch.f('ix_gpus_nvlink_domain'), ['nvlink_domain'], unique=False)
    gpus = sa.table('gpus', sa.column('id', sa.Integer), sa.column('switch_fabric', sa.JSON),
                    sa.column('nvlink_domain', sa.String))
    conn = op.get_bind()
    rows = conn.execute(sa.select(gpus.c.id, gpus.c.switch_fabric)
                        .where(gpus.c.switch_fabric.is_not(None))).all()
    updates = [{"gpu_id": gpu_id, "domain": key} for gpu_id, fabric in rows
               if isinstance(fabric, dict)
               and (key := domain_key(fabric.get("cluster_uuid"))) is not None]
    if updates:
        conn.execute(gpus.update().where(gpus.c.id == sa.bindparam("gpu_id"))
                     .values(nvlink_domain=sa.bindparam("domain")), updates)


def downgrade() -> None:
    with op.batch_alter_table('gpus') as batch:
        batch.drop_index(batch.f('ix_gpus_nvlink_domain'))
        batch.drop_column('nvlink_domain')
