"""A narrower `measurements` row: NULL for no foreign traffic and for an empty GPU set, and
on PostgreSQL the 8-byte columns first.

- `foreign_bytes` NULL where the result said 0 (every row of an idle host), `gpus` NULL
  where the set is empty (every test but a GPU-set one, whose GPUs are src/dst): read back
  as 0 and [] (`foreign_bytes_of`, `gpus_of` in app/store/tables/history.py). A NULL takes
  no bytes (the row has a null bitmap already: `error` and `throttle` are NULL), 0 took 8
  and `[]` 3. Rows stored before keep their 0 and [], which read the same.
- PostgreSQL: the parent is made again with its columns in the order id, report_id,
  measured_at, value, foreign_bytes (8-byte), host_id, src, dst (4), contended, then the
  variable-length ones, so no alignment padding falls between them (the order before put
  a 4-byte and a text column before each 8-byte one: ~12 bytes of padding a row). Nothing
  is rewritten: the day partitions holding rows are detached from the old parent and
  attached to the new one as they are (a partition's column order may differ from its
  parent's; they age out by retention), keeping their indexes; the empty ones (today's
  and the days ahead on a young database) are made again in the new order.
  `partitions.create_day` moves a default partition's rows by column name since.

A downgrade writes 0 and [] for the NULLs and makes the two columns NOT NULL again; the
column order stays (the code before reads by name).

Revision ID: 0034
Revises: 0033
"""
from datetime import date
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa

from peerwatch.app.store import partitions

revision: str = '0034'
down_revision: Union[str, Sequence[str], None] = '0033'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

TABLE = 'measurements'
ORDER = ('id', 'report_id', 'measured_at', 'value', 'foreign_bytes', 'host_id', 'src', 'dst',
         'contended', 'test', 'gpus', 'error', 'throttle')
NULL_IS = {'foreign_bytes': '0', 'gpus': "'[]'"}  # what a NULL stands for
INDEXES = {  # as at 0033
    'ix_measurements_report_id': 'btree (report_id)',
    'ix_measurements_host_id_src_dst_test': 'btree (host_id, src, dst, test)',
    'ix_measurements_measured_at': 'brin (measured_at)',
}


def _is_empty(conn: sa.Connection, table: str) -> bool:
    return conn.exec_driver_sql(f'SELECT NOT EXISTS (SELECT 1 FROM {table})').scalar()


def _nullable(conn: sa.Connection, table: str) -> None:
    drops = ', '.join(f'ALTER COLUMN {c} DROP NOT NULL' for c in NULL_IS)
    conn.exec_driver_sql(f'ALTER TABLE {table} {drops}')


def _column_ddl(conn: sa.Connection) -> str:
    """The parent's columns, each as reflected (type, NOT NULL, default), in ORDER."""
    found = {c['name']: c for c in sa.inspect(conn).get_columns(TABLE)}
    assert set(found) == set(ORDER), f'measurements has {sorted(found)}'
    out = []
    for name in ORDER:
        c = found[name]
        ddl = f'{name} {c["type"].compile(dialect=conn.dialect)}'
        if c['default'] is not None:
            ddl += f' DEFAULT {c["default"]}'
        if not c['nullable'] and name not in NULL_IS:
            ddl += ' NOT NULL'
        out.append(ddl)
    return ', '.join(out)


def _new_parent(conn: sa.Connection) -> tuple[list[date], bool]:
    """Detach every partition, make the parent again in ORDER with its foreign keys and
    indexes; (the day partitions detached, whether a default one was)."""
    days = partitions.days(conn, TABLE)
    has_default = conn.exec_driver_sql(
        f"SELECT to_regclass('{TABLE}_default') IS NOT NULL").scalar()
    names = [partitions.partition_name(TABLE, d) for d in days]
    for name in names + ([f'{TABLE}_default'] if has_default else []):
        conn.exec_driver_sql(f'ALTER TABLE {TABLE} DETACH PARTITION {name}')
    columns, fks = _column_ddl(conn), sa.inspect(conn).get_foreign_keys(TABLE)
    conn.exec_driver_sql(f'ALTER SEQUENCE {TABLE}_id_seq OWNED BY NONE')
    conn.exec_driver_sql(f'DROP TABLE {TABLE}')
    conn.exec_driver_sql(f'CREATE TABLE {TABLE} ({columns}) '
                         f'PARTITION BY RANGE ({partitions.COLUMNS[TABLE]})')
    conn.exec_driver_sql(f'ALTER SEQUENCE {TABLE}_id_seq OWNED BY {TABLE}.id')
    for fk in fks:
        on_delete = fk['options'].get('ondelete')
        conn.exec_driver_sql(
            f"ALTER TABLE {TABLE} ADD CONSTRAINT {fk['name']} FOREIGN KEY "
            f"({', '.join(fk['constrained_columns'])}) REFERENCES {fk['referred_table']} "
            f"({', '.join(fk['referred_columns'])})"
            + (f' ON DELETE {on_delete}' if on_delete else ''))
    for name, using in INDEXES.items():
        conn.exec_driver_sql(f'CREATE INDEX {name} ON {TABLE} USING {using}')
    return days, has_default


def _upgrade_postgresql(conn: sa.Connection) -> None:
    days, has_default = _new_parent(conn)
    default = f'{TABLE}_default'
    if has_default and not _is_empty(conn, default):
        _nullable(conn, default)
        conn.exec_driver_sql(f'ALTER TABLE {TABLE} ATTACH PARTITION {default} DEFAULT')
    else:
        if has_default:
            conn.exec_driver_sql(f'DROP TABLE {default}')
        partitions.create_default(conn, TABLE)
    for day in days:
        name = partitions.partition_name(TABLE, day)
        if _is_empty(conn, name):  # made again in the new order
            conn.exec_driver_sql(f'DROP TABLE {name}')
            partitions.create_day(conn, TABLE, day)
        else:  # attached as it is: its rows, order and indexes kept
            _nullable(conn, name)
            partitions.attach_day(conn, TABLE, day)


def upgrade() -> None:
    conn = op.get_bind()
    if conn.dialect.name == 'postgresql':
        _upgrade_postgresql(conn)
        return
    with op.batch_alter_table(TABLE) as batch:
        batch.alter_column('foreign_bytes', existing_type=sa.BigInteger(), nullable=True)
        batch.alter_column('gpus', existing_type=sa.JSON(), nullable=True)


def downgrade() -> None:
    for column, value in NULL_IS.items():
        op.execute(f'UPDATE {TABLE} SET {column} = {value} WHERE {column} IS NULL')
    if op.get_bind().dialect.name == 'postgresql':
        sets = ', '.join(f'ALTER COLUMN {c} SET NOT NULL' for c in NULL_IS)
        op.execute(f'ALTER TABLE {TABLE} {sets}')
        return
    with op.batch_alter_table(TABLE) as batch:
        batch.alter_column('foreign_bytes', existing_type=sa.BigInteger(), nullable=False)
        batch.alter_column('gpus', existing_type=sa.JSON(), nullable=False)
