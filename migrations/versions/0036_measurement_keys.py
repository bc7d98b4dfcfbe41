"""A measurement names its series by a key (issue 37: bytes a host costs a day).

`measurement_keys` holds each host's (test, src, dst, GPU set) once, a few hundred a host;
a `measurements` row keeps its key's id (4 bytes) instead of the host, test, pair and set
(~20 bytes), and has eight columns, so PostgreSQL's row header (with a one-byte null
bitmap) is 24 bytes where it was 32: ~84 bytes a row with its line pointer become ~60.
Its key index is on key_id alone (deduplicated as 0033's (host_id, src, dst, test) was).
A GPU set is kept as text ("0,1,2", "" for none), and `ident` is the whole key as one text,
unique per host, so two writers seeing a new key together keep it once.

The rows are written again with their key ids: on PostgreSQL each day partition (and the
default one) is detached, made again from the new parent and filled from the old one, which
is then dropped (a rewrite of the raw history, up to its 30 days: run it in a quiet hour
on a large fleet); on SQLite the table is made again. A downgrade puts the host, test, pair
and set back into each row from its key.

Revision ID: 0036
Revises: 0035
"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa

from peerwatch.app.store import partitions

revision: str = '0036'
down_revision: Union[str, Sequence[str], None] = '0035'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

TABLE = 'measurements'
KEYS = 'measurement_keys'
KEY_COLUMNS = ('host_id', 'test', 'src', 'dst', 'gpus')  # what a row names through its key
KEPT = ('report_id', 'measured_at', 'value', 'foreign_bytes', 'contended', 'error', 'throttle')
MAP = 'measurement_key_map'  # old row's key columns -> key id, for the upgrade's copy
OLD_INDEX = 'ix_measurements_host_id_src_dst_test'
NEW_INDEX = 'ix_measurements_key_id'
# the old row's GPU set as text, the way the map keeps it: NULL (0034) and [] are the same
OLD_GPUS = "coalesce(CAST(m.gpus AS TEXT), '')"
MATCH = (f'k.host_id = m.host_id AND k.test = m.test AND coalesce(k.src, -1) = '
         f'coalesce(m.src, -1) AND coalesce(k.dst, -1) = coalesce(m.dst, -1) AND '
         f'k.raw_gpus = {OLD_GPUS}')


def _keys_table() -> None:
    op.create_table(
        KEYS,
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('host_id', sa.Integer(), nullable=False),
        sa.Column('test', sa.String(16), nullable=False),
        sa.Column('src', sa.Integer(), nullable=True),
        sa.Column('dst', sa.Integer(), nullable=True),
        sa.Column('gpus', sa.Text(), nullable=False),
        sa.Column('ident', sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(['host_id'], ['hosts.id'],
                                name=op.f('fk_measurement_keys_host_id_hosts'),
                                ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_measurement_keys')),
        sa.UniqueConstraint('host_id', 'ident',
                            name=op.f('uq_measurement_keys_host_id_ident')),
    )


def _canonical_gpus(dialect: str) -> str:
    """SQL of the map's `raw_gpus` (a stored JSON set, "" for NULL) as the key keeps it:
    "[0, 1]" -> "0,1", "[]" and "" -> ""."""
    if dialect == 'postgresql':
        joined = ("(SELECT string_agg(e, ',' ORDER BY o) FROM "
                  "json_array_elements_text(CAST(raw_gpus AS JSON)) WITH ORDINALITY t(e, o))")
    else:
        joined = "(SELECT group_concat(value, ',') FROM json_each(raw_gpus))"
    return f"CASE WHEN raw_gpus = '' THEN '' ELSE coalesce({joined}, '') END"


IDENT = ("test || ':' || coalesce(CAST(src AS TEXT), '') || ':' || "
         "coalesce(CAST(dst AS TEXT), '') || ':' || gpus")  # as `key_ident` writes it


def _fill_keys(conn: sa.Connection) -> None:
    """Every key the stored rows name, and the map from their old columns to its id: in
    SQL, so a fleet's millions of keys never pass through this process."""
    conn.exec_driver_sql(
        f'CREATE TEMPORARY TABLE {MAP} AS SELECT DISTINCT m.host_id, m.test, m.src, m.dst, '
        f'{OLD_GPUS} AS raw_gpus, CAST(NULL AS TEXT) AS gpus, CAST(NULL AS TEXT) AS ident, '
        f'CAST(NULL AS INTEGER) AS key_id FROM {TABLE} m')
    conn.exec_driver_sql(f'UPDATE {MAP} SET gpus = {_canonical_gpus(conn.dialect.name)}')
    conn.exec_driver_sql(f'UPDATE {MAP} SET ident = {IDENT}')
    conn.exec_driver_sql(  # "[]" and NULL, "[0, 1]" and "[0,1]": one key
        f'INSERT INTO {KEYS} (host_id, test, src, dst, gpus, ident) SELECT host_id, '
        f'min(test), min(src), min(dst), min(gpus), ident FROM {MAP} GROUP BY host_id, ident')
    conn.exec_driver_sql(f'UPDATE {MAP} SET key_id = (SELECT k.id FROM {KEYS} k WHERE '
                         f'k.host_id = {MAP}.host_id AND k.ident = {MAP}.ident)')
    conn.exec_driver_sql(f'ANALYZE {MAP}')


def _copy_rows(conn: sa.Connection, source: str, target: str) -> None:
    kept = ', '.join(KEPT)
    conn.exec_driver_sql(
        f'INSERT INTO {target} ({kept}, key_id) SELECT {", ".join("m." + c for c in KEPT)}, '
        f'k.key_id FROM {source} m JOIN {MAP} k ON {MATCH}')


def _upgrade_postgresql(conn: sa.Connection) -> None:
    days = partitions.days(conn, TABLE)
    olds = [(partitions.partition_name(TABLE, d), d) for d in days]
    olds.append((f'{TABLE}_default', None))
    for name, _ in olds:
        conn.exec_driver_sql(f'ALTER TABLE {TABLE} DETACH PARTITION {name}')
        conn.exec_driver_sql(f'ALTER TABLE {name} RENAME TO old_{name}')
    conn.exec_driver_sql(f'DROP INDEX {OLD_INDEX}')
    conn.exec_driver_sql(f'ALTER TABLE {TABLE} DROP COLUMN host_id, DROP COLUMN test, '
                         'DROP COLUMN src, DROP COLUMN dst, DROP COLUMN gpus, '
                         f'ADD COLUMN key_id INTEGER NOT NULL')
    conn.exec_driver_sql(f'ALTER TABLE {TABLE} ADD CONSTRAINT fk_{TABLE}_key_id_{KEYS} '
                         f'FOREIGN KEY (key_id) REFERENCES {KEYS} (id) ON DELETE CASCADE')
    conn.exec_driver_sql(f'CREATE INDEX {NEW_INDEX} ON {TABLE} (key_id)')
    for name, day in olds:
        conn.exec_driver_sql(f'CREATE TABLE {name} (LIKE {TABLE} INCLUDING DEFAULTS)')
        _copy_rows(conn, f'old_{name}', name)
        conn.exec_driver_sql(f'DROP TABLE old_{name}')  # before its index names are taken
        if day is None:
            conn.exec_driver_sql(f'ALTER TABLE {TABLE} ATTACH PARTITION {name} DEFAULT')
        else:
            partitions.attach_day(conn, TABLE, day)


def _measurements_sqlite(old: bool) -> sa.Table:
    """`measurements` on SQLite: as at 0035 (`old`) or as after 0036."""
    if old:
        named = [sa.Column('host_id', sa.Integer(), sa.ForeignKey(
                     'hosts.id', name='fk_measurements_host_id_hosts', ondelete='CASCADE'),
                     nullable=False),
                 sa.Column('src', sa.Integer()), sa.Column('dst', sa.Integer()),
                 sa.Column('test', sa.String(16), nullable=False),
                 sa.Column('gpus', sa.JSON())]
        index = sa.Index(OLD_INDEX, 'host_id', 'src', 'dst', 'test')
    else:
        named = [sa.Column('key_id', sa.Integer(), sa.ForeignKey(
            f'{KEYS}.id', name=f'fk_{TABLE}_key_id_{KEYS}', ondelete='CASCADE'),
            nullable=False)]
        index = sa.Index(NEW_INDEX, 'key_id')
    meta = sa.MetaData()
    sa.Table('hosts', meta, sa.Column('id', sa.Integer(), primary_key=True))
    sa.Table(KEYS, meta, sa.Column('id', sa.Integer(), primary_key=True))
    return sa.Table(
        f'{TABLE}_new', meta,
        sa.Column('report_id', sa.Integer(), nullable=False),
        sa.Column('measured_at', sa.DateTime(), nullable=False),
        sa.Column('value', sa.Float()),
        sa.Column('foreign_bytes', sa.BigInteger()),
        *named,
        sa.Column('contended', sa.Boolean(), nullable=False),
        sa.Column('error', sa.Text()),
        sa.Column('throttle', sa.String(200)),
        sa.Index('ix_measurements_report_id', 'report_id'),
        sa.Index('ix_measurements_measured_at', 'measured_at'),
        index)


def _remake_sqlite(conn: sa.Connection, old: bool, select_sql: str) -> None:
    """Make `measurements` again in its 0035 (`old`) or 0036 shape from `select_sql`."""
    table = _measurements_sqlite(old)
    for index in table.indexes:
        conn.exec_driver_sql(f'DROP INDEX IF EXISTS {index.name}')
    table.create(conn)
    conn.exec_driver_sql(f'INSERT INTO {TABLE}_new ({", ".join(c.name for c in table.c)}) '
                         + select_sql)
    conn.exec_driver_sql(f'DROP TABLE {TABLE}')
    conn.exec_driver_sql(f'ALTER TABLE {TABLE}_new RENAME TO {TABLE}')


def upgrade() -> None:
    conn = op.get_bind()
    _keys_table()
    _fill_keys(conn)
    if conn.dialect.name == 'postgresql':
        _upgrade_postgresql(conn)
    else:
        kept = ', '.join('m.' + c for c in KEPT[:4])
        _remake_sqlite(conn, False, f'SELECT {kept}, k.key_id, m.contended, m.error, '
                       f'm.throttle FROM {TABLE} m JOIN {MAP} k ON {MATCH}')
    conn.exec_driver_sql(f'DROP TABLE {MAP}')


# the key's GPU set as the JSON of 0034-0035: NULL for none
JSON_GPUS = "CASE WHEN k.gpus = '' THEN NULL ELSE '[' || k.gpus || ']' END"


def downgrade() -> None:
    conn = op.get_bind()
    if conn.dialect.name == 'postgresql':
        conn.exec_driver_sql(
            f'ALTER TABLE {TABLE} ADD COLUMN host_id INTEGER, ADD COLUMN src INTEGER, '
            'ADD COLUMN dst INTEGER, ADD COLUMN test VARCHAR(16), ADD COLUMN gpus JSON')
        conn.exec_driver_sql(
            f'UPDATE {TABLE} m SET host_id = k.host_id, src = k.src, dst = k.dst, '
            f'test = k.test, gpus = CAST({JSON_GPUS} AS JSON) FROM {KEYS} k '
            'WHERE k.id = m.key_id')
        conn.exec_driver_sql(f'ALTER TABLE {TABLE} ALTER COLUMN host_id SET NOT NULL, '
                             'ALTER COLUMN test SET NOT NULL, DROP COLUMN key_id')
        conn.exec_driver_sql(f'ALTER TABLE {TABLE} ADD CONSTRAINT fk_{TABLE}_host_id_hosts '
                             'FOREIGN KEY (host_id) REFERENCES hosts (id) ON DELETE CASCADE')
        conn.exec_driver_sql(f'CREATE INDEX {OLD_INDEX} ON {TABLE} (host_id, src, dst, test)')
    else:
        kept = ', '.join('m.' + c for c in KEPT[:4])
        _remake_sqlite(conn, True, f'SELECT {kept}, k.host_id, k.src, k.dst, k.test, '
                       f'{JSON_GPUS}, m.contended, m.error, m.throttle FROM {TABLE} m '
                       f'JOIN {KEYS} k ON k.id = m.key_id')
    op.drop_table(KEYS)
