"""Fewer bytes a host: the measurements' key index without its time, nic_port_samples keeps
what is read.

- measurements: `(host_id, src, dst, test)` replaces `(host_id, src, dst, test,
  measured_at)`. Every row of a (pair, test) has the same entry, which PostgreSQL's B-tree
  deduplication (13+) stores once with a list of row pointers: ~8 bytes a row where the
  unique 5-column entries took ~70 (a third of the table, leaves ~70 % full). A key's time
  range is read by ANDing it with the BRIN on measured_at (the pages of the range), a
  host's window by the BRIN and the host; the judge's new rows by report_id as before.
- gpu_samples: a clocks sample is stored as a JSON list in app/store/clocks_row.py's order
  (the nine field names were ~150 of a row's ~340 bytes). Rows written before keep their
  object, which reads the same (`clocks_of`); nothing is rewritten on the way up. A
  downgrade turns the lists back into objects (the code before reads only those).
- nic_port_samples: `hw_counters` (the mlx5 driver's own counters, probes/nics.py) was written with every
  reading and never read: the NIC judge, its API answer and `/metrics` read `counters`
  (app/queries/nics.py, app/analysis/nic_health.py). Dropped with its stored values: no
  answer of the server ever showed them (the agent's `/metrics` still has them). ~40 bytes a
  row of ~490.
- PostgreSQL: no primary key index, as the other raw samples since 0029: nothing looks a row
  up by id or refers to one (ids stay unique by their sequence; the id only orders a
  port's readings of one time), and the B-tree was ~10 % of the table's bytes.

A downgrade puts `hw_counters` back as `{}` in every row (the values are gone) and the
primary key back.

Revision ID: 0033
Revises: 0032
"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa

revision: str = '0033'
down_revision: Union[str, Sequence[str], None] = '0032'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

TABLE = 'nic_port_samples'
OLD_KEY = ['host_id', 'src', 'dst', 'test', 'measured_at']
NEW_KEY = OLD_KEY[:-1]


def _name(columns: list[str]) -> str:
    return 'ix_measurements_' + '_'.join(columns)


CLOCK_FIELDS = ("reasons_supported", "sm_clock_mhz", "sm_clock_max_mhz", "power_mw",
                "power_limit_mw", "temperature_c", "slowdown_temperature_c",
                "violation_power_ns", "violation_thermal_ns")  # as 0033 stores them


def _clocks_as_objects() -> None:
    """Each stored clocks list back into the object the code before 0033 reads."""
    if op.get_bind().dialect.name == 'postgresql':
        pairs = ", ".join(f"'{n}', clocks->{i}" for i, n in enumerate(CLOCK_FIELDS))
        op.execute(f"UPDATE gpu_samples SET clocks = json_build_object({pairs}) "
                   "WHERE json_typeof(clocks) = 'array'")
    else:
        pairs = ", ".join(f"'{n}', json_extract(clocks, '$[{i}]')"
                          for i, n in enumerate(CLOCK_FIELDS))
        op.execute(f"UPDATE gpu_samples SET clocks = json_object({pairs}) "
                   "WHERE json_type(clocks) = 'array'")


def upgrade() -> None:
    op.create_index(_name(NEW_KEY), 'measurements', NEW_KEY)
    op.drop_index(_name(OLD_KEY), table_name='measurements')
    with op.batch_alter_table(TABLE) as batch:
        batch.drop_column('hw_counters')
    if op.get_bind().dialect.name == 'postgresql':
        op.execute(f'ALTER TABLE {TABLE} DROP CONSTRAINT pk_{TABLE}')


def downgrade() -> None:
    _clocks_as_objects()
    if op.get_bind().dialect.name == 'postgresql':
        op.execute(f'ALTER TABLE {TABLE} ADD CONSTRAINT pk_{TABLE} PRIMARY KEY (id)')
    with op.batch_alter_table(TABLE) as batch:
        batch.add_column(sa.Column('hw_counters', sa.JSON(), nullable=False,
                                   server_default='{}'))
    with op.batch_alter_table(TABLE) as batch:
        batch.alter_column('hw_counters', server_default=None)
    op.create_index(_name(OLD_KEY), 'measurements', OLD_KEY)
    op.drop_index(_name(NEW_KEY), table_name='measurements')
