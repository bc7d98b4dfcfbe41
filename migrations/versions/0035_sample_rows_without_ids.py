"""The raw sample rows lose what nothing reads, and the state rows updated every sweep keep
room on their pages (issue 37: bytes a host costs a day).

- `measurements`, `link_samples`, `gpu_samples`: no `id`. Nothing looks a row up by it
  (the readers go by host and time, by key, or by report), PostgreSQL's partitioned tables
  have had no index on it since 0029, and it was 8 bytes of each row (~9 % of a
  measurement's). SQLite's tables are made again without it (its rowid stays, unnamed).
- `link_samples`: no `report_id`. Only the duplicate answer read it, to count a report's
  rows: those are the host's rows at the report's readings' times (a port has one reading
  a time).
- `measurement_rollups`: no primary key. Its B-tree, an entry per row (~75 bytes after the
  hourly inserts' page splits), was ~40 % of the table; a (host_id, src, dst, test) index,
  deduplicated as `measurements`' (0033), serves a key's rows, the BRIN of hour their time.
  Its one writer keeps a key's hour once (`roll_up`, under maintenance's lock).
- PostgreSQL: `judged_pairs`, `host_runtime` and `fleet_peer_stats`, rewritten in place at
  every sweep like `judged_tests` (0022, 0029), keep half of each page free, so an update
  stays on its page (HOT: no new index entry, the old version pruned by the next read)
  instead of growing the table until vacuum comes.

On PostgreSQL a dropped column takes no bytes in rows written after (a NULL of the row's
bitmap until the partition ages out; partitions made after are made without it). A
downgrade gives the rows ids again from a new sequence and `link_samples` the report id 0
(unknown: it is not kept).

Revision ID: 0035
Revises: 0034
"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa

revision: str = '0035'
down_revision: Union[str, Sequence[str], None] = '0034'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

WITHOUT_ID = ('measurements', 'link_samples', 'gpu_samples')
ROLLUPS = 'measurement_rollups'
ROLLUP_KEY = ('host_id', 'src', 'dst', 'test', 'hour')
ROLLUP_INDEX = 'ix_measurement_rollups_host_id_src_dst_test'
UPDATED_IN_PLACE = ('judged_pairs', 'host_runtime', 'fleet_peer_stats')
FILLFACTOR = 50
CARRIER = ('UPDATE link_samples SET report_id = coalesce((SELECT r.id FROM reports r '
           'WHERE r.host_id = link_samples.host_id AND r.finished_at >= link_samples.at '
           'ORDER BY r.finished_at LIMIT 1), 0)')


def _postgresql_upgrade() -> None:
    for table in WITHOUT_ID:
        op.execute(f'ALTER TABLE {table} DROP COLUMN id')  # its sequence goes with it
    op.execute('ALTER TABLE link_samples DROP COLUMN report_id')
    for table in UPDATED_IN_PLACE:
        op.execute(f'ALTER TABLE {table} SET (fillfactor = {FILLFACTOR})')
    op.execute(f'ALTER TABLE {ROLLUPS} DROP CONSTRAINT pk_{ROLLUPS}')
    op.execute(f'CREATE INDEX {ROLLUP_INDEX} ON {ROLLUPS} (host_id, src, dst, test)')


def _rollups(keyed: bool) -> sa.Table:
    """`measurement_rollups` on SQLite: keyed as before 0035, or not as after it."""
    key = {'primary_key': True} if keyed else {'nullable': False}
    indexes = [sa.Index(f'ix_{ROLLUPS}_hour', 'hour')]
    if not keyed:
        indexes.append(sa.Index(ROLLUP_INDEX, 'host_id', 'src', 'dst', 'test'))
    return sa.Table(
        ROLLUPS, sa.MetaData(),
        sa.Column('host_id', sa.Integer(), sa.ForeignKey(
            'hosts.id', name=f'fk_{ROLLUPS}_host_id_hosts', ondelete='CASCADE'), **key),
        sa.Column('src', sa.Integer(), **key),
        sa.Column('dst', sa.Integer(), **key),
        sa.Column('test', sa.String(16), **key),
        sa.Column('hour', sa.DateTime(), **key),
        sa.Column('count', sa.Integer(), nullable=False),
        *(sa.Column(c, sa.Float(), nullable=True) for c in ('min', 'max', 'sum')),
        sa.Column('contended_count', sa.Integer(), nullable=False),
        sa.Column('error_count', sa.Integer(), nullable=False),
        *indexes)


def upgrade() -> None:
    if op.get_bind().dialect.name == 'postgresql':
        _postgresql_upgrade()
        return
    for table in WITHOUT_ID:
        with op.batch_alter_table(table, recreate='always') as batch:
            batch.drop_column('id')
            if table == 'link_samples':
                batch.drop_column('report_id')
    with op.batch_alter_table(ROLLUPS, recreate='always', copy_from=_rollups(False)):
        pass


def _postgresql_downgrade() -> None:
    op.execute(f'DROP INDEX {ROLLUP_INDEX}')
    op.execute(f'ALTER TABLE {ROLLUPS} ADD CONSTRAINT pk_{ROLLUPS} '
               f'PRIMARY KEY ({", ".join(ROLLUP_KEY)})')
    for table in UPDATED_IN_PLACE:
        op.execute(f'ALTER TABLE {table} RESET (fillfactor)')
    op.execute('ALTER TABLE link_samples ADD COLUMN report_id BIGINT NOT NULL DEFAULT 0')
    op.execute('ALTER TABLE link_samples ALTER COLUMN report_id DROP DEFAULT')
    op.execute(CARRIER)
    for table in WITHOUT_ID:
        op.execute(f'ALTER TABLE {table} ADD COLUMN id BIGSERIAL NOT NULL')


def downgrade() -> None:
    if op.get_bind().dialect.name == 'postgresql':
        _postgresql_downgrade()
        return
    for table in WITHOUT_ID:
        with op.batch_alter_table(table, recreate='always') as batch:
            batch.add_column(sa.Column('id', sa.Integer(), primary_key=True))
            if table == 'link_samples':
                batch.add_column(sa.Column('report_id', sa.BigInteger(), nullable=False,
                                           server_default='0'))
    op.execute(CARRIER)
    with op.batch_alter_table(ROLLUPS, recreate='always', copy_from=_rollups(True)):
        pass
