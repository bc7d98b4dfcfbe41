"""Initial schema: inventory, history, baselines, rollups, alerts.

Revision ID: 0001
Revises: (none)
"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision: str = '0001'
down_revision: Union[str, Sequence[str], None] = None
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Upgrade schema."""
    op.create_table('alerts',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('rule', sa.String(length=128), nullable=False),
    sa.Column('fingerprint', sa.String(length=64), nullable=False),
    sa.Column('host', sa.String(length=253), nullable=True),
    sa.Column('labels', sa.JSON(), nullable=False),
    sa.Column('annotations', sa.JSON(), nullable=False),
    sa.Column('state', sa.String(length=16), nullable=False),
    sa.Column('active_since', sa.DateTime(timezone=True), nullable=False),
    sa.Column('fired_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('resolved_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('value', sa.Float(), nullable=True),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_alerts'))
    )
    with op.batch_alter_table('alerts', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_alerts_fingerprint_state'), ['fingerprint', 'state'], unique=False)
        batch_op.create_index(batch_op.f('ix_alerts_host_state'), ['host', 'state'], unique=False)

    op.create_table('hosts',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=253), nullable=False),
    sa.Column('fabric', sa.String(length=64), nullable=False),
    sa.Column('driver_version', sa.String(length=64), nullable=True),
    sa.Column('cuda_version', sa.String(length=64), nullable=True),
    sa.Column('probe_version', sa.String(length=64), nullable=True),
    sa.Column('first_seen', sa.DateTime(timezone=True), nullable=False),
    sa.Column('last_report_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('last_sweep_at', sa.DateTime(timezone=True), nullable=True),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_hosts')),
    sa.UniqueConstraint('name', name=op.f('uq_hosts_name'))
    )
    op.create_table('silences',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('matchers', sa.JSON(), nullable=False),
    sa.Column('created_by', sa.String(length=128), nullable=False),
    sa.Column('comment', sa.Text(), nullable=False),
    sa.Column('starts_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('ends_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_silences'))
    )
    with op.batch_alter_table('silences', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_silences_ends_at'), ['ends_at'], unique=False)

    op.create_table('alert_events',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('alert_id', sa.Integer(), nullable=False),
    sa.Column('state', sa.String(length=16), nullable=False),
    sa.Column('at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('value', sa.Float(), nullable=True),
    sa.Column('message', sa.Text(), nullable=True),
    sa.ForeignKeyConstraint(['alert_id'], ['alerts.id'], name=op.f('fk_alert_events_alert_id_alerts'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_alert_events'))
    )
    with op.batch_alter_table('alert_events', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_alert_events_alert_id'), ['alert_id'], unique=False)

    op.create_table('baselines',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('host_id', sa.Integer(), nullable=False),
    sa.Column('src', sa.Integer(), nullable=False),
    sa.Column('dst', sa.Integer(), nullable=False),
    sa.Column('test', sa.String(length=16), nullable=False),
    sa.Column('value', sa.Float(), nullable=False),
    sa.Column('spread', sa.Float(), nullable=False),
    sa.Column('n', sa.Integer(), nullable=False),
    sa.Column('window_s', sa.Float(), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['host_id'], ['hosts.id'], name=op.f('fk_baselines_host_id_hosts'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_baselines')),
    sa.UniqueConstraint('host_id', 'src', 'dst', 'test', name=op.f('uq_baselines_host_id_src_dst_test'))
    )
    op.create_table('gpus',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('host_id', sa.Integer(), nullable=False),
    sa.Column('index', sa.Integer(), nullable=False),
    sa.Column('uuid', sa.String(length=128), nullable=False),
    sa.Column('name', sa.String(length=128), nullable=False),
    sa.Column('pci_bus_id', sa.String(length=32), nullable=False),
    sa.Column('memory_total_bytes', sa.BigInteger(), nullable=False),
    sa.Column('cpu_affinity', sa.String(length=256), nullable=True),
    sa.Column('numa_node', sa.Integer(), nullable=True),
    sa.Column('nvlink_count', sa.Integer(), nullable=False),
    sa.Column('pcie', sa.JSON(), nullable=False),
    sa.Column('rdma', sa.JSON(), nullable=False),
    sa.Column('switch_fabric', sa.JSON(), nullable=True),
    sa.Column('present', sa.Boolean(), nullable=False),
    sa.Column('last_seen_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['host_id'], ['hosts.id'], name=op.f('fk_gpus_host_id_hosts'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_gpus')),
    sa.UniqueConstraint('host_id', 'index', name=op.f('uq_gpus_host_id_index'))
    )
    op.create_table('measurement_rollups',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('host_id', sa.Integer(), nullable=False),
    sa.Column('src', sa.Integer(), nullable=False),
    sa.Column('dst', sa.Integer(), nullable=False),
    sa.Column('test', sa.String(length=16), nullable=False),
    sa.Column('hour', sa.DateTime(timezone=True), nullable=False),
    sa.Column('count', sa.Integer(), nullable=False),
    sa.Column('min', sa.Float(), nullable=True),
    sa.Column('max', sa.Float(), nullable=True),
    sa.Column('sum', sa.Float(), nullable=True),
    sa.Column('contended_count', sa.Integer(), nullable=False),
    sa.Column('error_count', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['host_id'], ['hosts.id'], name=op.f('fk_measurement_rollups_host_id_hosts'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_measurement_rollups')),
    sa.UniqueConstraint('host_id', 'src', 'dst', 'test', 'hour', name=op.f('uq_measurement_rollups_host_id_src_dst_test_hour'))
    )
    with op.batch_alter_table('measurement_rollups', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_measurement_rollups_hour'), ['hour'], unique=False)

    op.create_table('nvlinks',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('host_id', sa.Integer(), nullable=False),
    sa.Column('gpu', sa.Integer(), nullable=False),
    sa.Column('link', sa.Integer(), nullable=False),
    sa.Column('state', sa.String(length=16), nullable=False),
    sa.Column('version', sa.String(length=16), nullable=True),
    sa.Column('speed_bps', sa.Float(), nullable=True),
    sa.Column('remote_type', sa.String(length=16), nullable=False),
    sa.Column('remote_pci_bus_id', sa.String(length=32), nullable=True),
    sa.Column('remote_gpu', sa.Integer(), nullable=True),
    sa.Column('capabilities', sa.JSON(), nullable=False),
    sa.Column('present', sa.Boolean(), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['host_id'], ['hosts.id'], name=op.f('fk_nvlinks_host_id_hosts'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_nvlinks')),
    sa.UniqueConstraint('host_id', 'gpu', 'link', name=op.f('uq_nvlinks_host_id_gpu_link'))
    )
    op.create_table('pairs',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('host_id', sa.Integer(), nullable=False),
    sa.Column('src', sa.Integer(), nullable=False),
    sa.Column('dst', sa.Integer(), nullable=False),
    sa.Column('topology', sa.String(length=8), nullable=False),
    sa.Column('pcie_path', sa.String(length=8), nullable=False),
    sa.Column('nvlink_width', sa.Integer(), nullable=False),
    sa.Column('via_nvswitch', sa.Boolean(), nullable=False),
    sa.Column('p2p', sa.JSON(), nullable=False),
    sa.Column('can_access_peer', sa.Boolean(), nullable=True),
    sa.Column('present', sa.Boolean(), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['host_id'], ['hosts.id'], name=op.f('fk_pairs_host_id_hosts'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_pairs')),
    sa.UniqueConstraint('host_id', 'src', 'dst', name=op.f('uq_pairs_host_id_src_dst'))
    )
    op.create_table('reports',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('report_id', sa.Uuid(), nullable=False),
    sa.Column('host_id', sa.Integer(), nullable=False),
    sa.Column('schema_version', sa.Integer(), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('started_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('finished_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('received_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('gpu_time_s', sa.Float(), nullable=False),
    sa.Column('wall_time_s', sa.Float(), nullable=False),
    sa.Column('device_memory_bytes_max', sa.BigInteger(), nullable=False),
    sa.Column('agent_cpu_s', sa.Float(), nullable=False),
    sa.Column('agent_rss_bytes', sa.BigInteger(), nullable=False),
    sa.Column('dropped_reports', sa.Integer(), nullable=False),
    sa.Column('skipped', sa.JSON(), nullable=False),
    sa.Column('errors', sa.JSON(), nullable=False),
    sa.ForeignKeyConstraint(['host_id'], ['hosts.id'], name=op.f('fk_reports_host_id_hosts'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_reports')),
    sa.UniqueConstraint('report_id', name=op.f('uq_reports_report_id'))
    )
    with op.batch_alter_table('reports', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_reports_host_id_finished_at'), ['host_id', 'finished_at'], unique=False)

    op.create_table('gpu_samples',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('report_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('host_id', sa.Integer(), nullable=False),
    sa.Column('at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('gpu', sa.Integer(), nullable=False),
    sa.Column('pcie_replay', sa.BigInteger(), nullable=True),
    sa.Column('utilization_pct', sa.Float(), nullable=True),
    sa.Column('memory_used_bytes', sa.BigInteger(), nullable=True),
    sa.Column('compute_processes', sa.Integer(), nullable=True),
    sa.ForeignKeyConstraint(['host_id'], ['hosts.id'], name=op.f('fk_gpu_samples_host_id_hosts'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['report_id'], ['reports.id'], name=op.f('fk_gpu_samples_report_id_reports'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_gpu_samples'))
    )
    with op.batch_alter_table('gpu_samples', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_gpu_samples_at'), ['at'], unique=False)
        batch_op.create_index(batch_op.f('ix_gpu_samples_host_id_gpu_at'), ['host_id', 'gpu', 'at'], unique=False)
        batch_op.create_index(batch_op.f('ix_gpu_samples_report_id'), ['report_id'], unique=False)

    op.create_table('link_samples',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('report_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('host_id', sa.Integer(), nullable=False),
    sa.Column('at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('gpu', sa.Integer(), nullable=False),
    sa.Column('link', sa.Integer(), nullable=False),
    sa.Column('tx_bytes', sa.BigInteger(), nullable=True),
    sa.Column('rx_bytes', sa.BigInteger(), nullable=True),
    sa.Column('replay', sa.BigInteger(), nullable=True),
    sa.Column('recovery', sa.BigInteger(), nullable=True),
    sa.Column('crc_flit', sa.BigInteger(), nullable=True),
    sa.Column('crc_data', sa.BigInteger(), nullable=True),
    sa.Column('ecc_data', sa.BigInteger(), nullable=True),
    sa.ForeignKeyConstraint(['host_id'], ['hosts.id'], name=op.f('fk_link_samples_host_id_hosts'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['report_id'], ['reports.id'], name=op.f('fk_link_samples_report_id_reports'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_link_samples'))
    )
    with op.batch_alter_table('link_samples', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_link_samples_at'), ['at'], unique=False)
        batch_op.create_index(batch_op.f('ix_link_samples_host_id_gpu_link_at'), ['host_id', 'gpu', 'link', 'at'], unique=False)
        batch_op.create_index(batch_op.f('ix_link_samples_report_id'), ['report_id'], unique=False)

    op.create_table('measurements',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('report_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('host_id', sa.Integer(), nullable=False),
    sa.Column('test', sa.String(length=16), nullable=False),
    sa.Column('src', sa.Integer(), nullable=True),
    sa.Column('dst', sa.Integer(), nullable=True),
    sa.Column('gpus', sa.JSON(), nullable=False),
    sa.Column('value', sa.Float(), nullable=True),
    sa.Column('unit', sa.String(length=8), nullable=False),
    sa.Column('samples', sa.JSON(), nullable=False),
    sa.Column('bytes_per_copy', sa.BigInteger(), nullable=False),
    sa.Column('copies', sa.Integer(), nullable=False),
    sa.Column('gpu_time_s', sa.Float(), nullable=False),
    sa.Column('device_memory_bytes', sa.BigInteger(), nullable=False),
    sa.Column('verified', sa.Boolean(), nullable=False),
    sa.Column('contended', sa.Boolean(), nullable=False),
    sa.Column('foreign_bytes', sa.BigInteger(), nullable=False),
    sa.Column('error', sa.Text(), nullable=True),
    sa.Column('measured_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['host_id'], ['hosts.id'], name=op.f('fk_measurements_host_id_hosts'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['report_id'], ['reports.id'], name=op.f('fk_measurements_report_id_reports'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_measurements'))
    )
    with op.batch_alter_table('measurements', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_measurements_host_id_src_dst_test_measured_at'), ['host_id', 'src', 'dst', 'test', 'measured_at'], unique=False)
        batch_op.create_index(batch_op.f('ix_measurements_measured_at'), ['measured_at'], unique=False)
        batch_op.create_index(batch_op.f('ix_measurements_report_id'), ['report_id'], unique=False)



def downgrade() -> None:
    """Downgrade schema."""
    with op.batch_alter_table('measurements', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_measurements_report_id'))
        batch_op.drop_index(batch_op.f('ix_measurements_measured_at'))
        batch_op.drop_index(batch_op.f('ix_measurements_host_id_src_dst_test_measured_at'))

    op.drop_table('measurements')
    with op.batch_alter_table('link_samples', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_link_samples_report_id'))
        batch_op.drop_index(batch_op.f('ix_link_samples_host_id_gpu_link_at'))
        batch_op.drop_index(batch_op.f('ix_link_samples_at'))

    op.drop_table('link_samples')
    with op.batch_alter_table('gpu_samples', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_gpu_samples_report_id'))
        batch_op.drop_index(batch_op.f('ix_gpu_samples_host_id_gpu_at'))
        batch_op.drop_index(batch_op.f('ix_gpu_samples_at'))

    op.drop_table('gpu_samples')
    with op.batch_alter_table('reports', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_reports_host_id_finished_at'))

    op.drop_table('reports')
    op.drop_table('pairs')
    op.drop_table('nvlinks')
    with op.batch_alter_table('measurement_rollups', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_measurement_rollups_hour'))

    op.drop_table('measurement_rollups')
    op.drop_table('gpus')
    op.drop_table('baselines')
    with op.batch_alter_table('alert_events', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_alert_events_alert_id'))

    op.drop_table('alert_events')
    with op.batch_alter_table('silences', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_silences_ends_at'))

    op.drop_table('silences')
    op.drop_table('hosts')
    with op.batch_alter_table('alerts', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_alerts_host_state'))
        batch_op.drop_index(batch_op.f('ix_alerts_fingerprint_state'))

    op.drop_table('alerts')
