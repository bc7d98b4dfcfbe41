"""Retention by partition, no cascades, narrower history rows.

- Nothing references `reports` any more: the report_id foreign keys of measurements,
  link_samples, gpu_samples and fabric_events (ON DELETE CASCADE) go, each table is pruned by
  its own time; the report_id indexes of link_samples and gpu_samples (served only that
  cascade) go too.
- measurements keeps what judging, charts, rollups and alerts read: samples, unit,
  bytes_per_copy, copies, gpu_time_s, device_memory_bytes and verified go. Its time index is
  a BRIN on PostgreSQL (rows come in time order; a few pages instead of a B-tree entry each).
- PostgreSQL: the raw day-partitioned tables (measurements, link_samples, gpu_samples) have no
  primary key index: nothing looks a row up by id or refers to one, ids stay unique by their
  sequence, and the (id, time) B-tree was 15-20 % of each table's bytes.
- PostgreSQL: judged_tests keeps 70 % of each page free (fillfactor 30, was 50 since 0022):
  every sweep rewrites each of a host's rows, and a new version stays on its page (HOT)
  only where the page has room; at 50 the room held one new version per row, so any
  snapshot older than the previous sweep (a reader, a vacuum) sent the next update off the
  page (a new index entry, the table growing until vacuum): 82-93 % of updates were HOT.
  Room for two versions per row costs ~1 KB a row, ~0.45 MB per 8-GPU host, once.
- measurement_rollups: its key (host_id, src, dst, test, hour) is its primary key, no id.
- PostgreSQL: `reports` and `measurement_rollups` are partitioned by month, `job_snapshots`
  by day (app/store/partitions.py), moved in place as 0007 moved the raw tables: the table is
  renamed aside, a partitioned one LIKE it takes its name, the periods from its oldest row
  (at most MAX_BACK_DAYS back; older rows go to the default partition and the next
  maintenance run prunes them) to a few days ahead are made, the rows moved, the old table
  dropped, keys and indexes made. Unique keys include the partition column
  ((report_id, finished_at), (snapshot_id, taken_at)).

Revision ID: 0029
Revises: 0027
"""
from datetime import UTC, datetime, timedelta
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa

from peerwatch.app.store import partitions

revision: str = '0029'
down_revision: Union[str, Sequence[str], None] = '0027'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

MAX_BACK_DAYS = 400
REFERRING = ("measurements", "link_samples", "gpu_samples", "fabric_events")
UNINDEXED = ("link_samples", "gpu_samples")
DROPPED = {  # measurements' columns left out, and how 0027 declared them
    "samples": sa.JSON(), "unit": sa.String(8), "bytes_per_copy": sa.BigInteger(),
    "copies": sa.Integer(), "gpu_time_s": sa.Float(), "device_memory_bytes": sa.BigInteger(),
    "verified": sa.Boolean(),
}
DEFAULTS = {"samples": "'[]'", "unit": "''", "bytes_per_copy": "0", "copies": "0",
            "gpu_time_s": "0", "device_memory_bytes": "0", "verified": "false"}
FILLFACTOR = 30  # judged_tests
ROLLUP_KEY = ["host_id", "src", "dst", "test", "hour"]


class Shape:
    """A table's keys and indexes at one revision: (name, columns[, using])."""

    def __init__(self, pk: list[str], uniques: dict[str, list[str]],
                 indexes: dict[str, tuple[list[str], str]]) -> None:
        self.pk, self.uniques, self.indexes = pk, uniques, indexes


NEW = {
    "reports": Shape(["id", "finished_at"],
                     {"uq_reports_report_id_finished_at": ["report_id", "finished_at"]},
                     {"ix_reports_host_id_finished_at": (["host_id", "finished_at"], "btree"),
                      "ix_reports_received_at": (["received_at"], "brin")}),
    "measurement_rollups": Shape(ROLLUP_KEY, {},
                                 {"ix_measurement_rollups_hour": (["hour"], "brin")}),
    "job_snapshots": Shape(["id", "taken_at"],
                           {"uq_job_snapshots_snapshot_id_taken_at": ["snapshot_id",
                                                                      "taken_at"]},
                           {"ix_job_snapshots_host_taken_at": (["host", "taken_at"], "btree"),
                            "ix_job_snapshots_host_job_id": (["host", "job_id"], "btree"),
                            "ix_job_snapshots_taken_at": (["taken_at"], "btree")}),
}
OLD = {
    "reports": Shape(["id"], {"uq_reports_report_id": ["report_id"]},
                     {"ix_reports_host_id_finished_at": (["host_id", "finished_at"], "btree"),
                      "ix_reports_received_at": (["received_at"], "btree")}),
    "measurement_rollups": Shape(["id"], {"uq_measurement_rollups_host_id_src_dst_test_hour":
                                          ROLLUP_KEY},
                                 {"ix_measurement_rollups_hour": (["hour"], "btree")}),
    "job_snapshots": Shape(["id"], {"uq_job_snapshots_snapshot_id": ["snapshot_id"]},
                           NEW["job_snapshots"].indexes),
}


def _fk(table: str) -> str:
    return f"fk_{table}_report_id_reports"


def _swap(conn: sa.Connection, table: str, column: str | None) -> list:
    """Rename `table` aside (its keys and indexes dropped) and make its replacement LIKE it,
    partitioned by `column` (or plain); the foreign keys to make again."""
    fks = sa.inspect(conn).get_foreign_keys(table)
    for uq in sa.inspect(conn).get_unique_constraints(table):
        conn.exec_driver_sql(f"ALTER TABLE {table} DROP CONSTRAINT {uq['name']}")
    for ix in sa.inspect(conn).get_indexes(table):
        if not ix.get("duplicates_constraint"):
            conn.exec_driver_sql(f"DROP INDEX {ix['name']}")
    for fk in fks:
        conn.exec_driver_sql(f"ALTER TABLE {table} DROP CONSTRAINT {fk['name']}")
    conn.exec_driver_sql(f"ALTER TABLE {table} DROP CONSTRAINT pk_{table}")
    conn.exec_driver_sql(f"ALTER TABLE {table} RENAME TO {table}_old")
    by = f" PARTITION BY RANGE ({column})" if column else ""
    conn.exec_driver_sql(f"CREATE TABLE {table} (LIKE {table}_old INCLUDING DEFAULTS){by}")
    return fks


def _fill(conn: sa.Connection, table: str, shape: Shape, fks: list) -> None:
    """Move the old rows in and make `shape`'s keys and indexes and the foreign keys."""
    old = {c["name"] for c in sa.inspect(conn).get_columns(f"{table}_old")}
    names = [c["name"] for c in sa.inspect(conn).get_columns(table) if c["name"] in old]
    cols = ", ".join(f'"{n}"' for n in names)
    conn.exec_driver_sql(f"INSERT INTO {table} ({cols}) SELECT {cols} FROM {table}_old")
    conn.exec_driver_sql(f"DROP TABLE {table}_old")
    conn.exec_driver_sql(f"ALTER TABLE {table} ADD CONSTRAINT pk_{table} "
                         f"PRIMARY KEY ({', '.join(shape.pk)})")
    for name, columns in shape.uniques.items():
        conn.exec_driver_sql(f"ALTER TABLE {table} ADD CONSTRAINT {name} "
                             f"UNIQUE ({', '.join(columns)})")
    for name, (columns, using) in shape.indexes.items():
        conn.exec_driver_sql(f"CREATE INDEX {name} ON {table} USING {using} "
                             f"({', '.join(columns)})")
    for fk in fks:
        on_delete = fk["options"].get("ondelete")
        conn.exec_driver_sql(
            f"ALTER TABLE {table} ADD CONSTRAINT {fk['name']} FOREIGN KEY "
            f"({', '.join(fk['constrained_columns'])}) REFERENCES {fk['referred_table']} "
            f"({', '.join(fk['referred_columns'])})"
            + (f" ON DELETE {on_delete}" if on_delete else ""))


def _partition(conn: sa.Connection, table: str) -> None:
    column = partitions.COLUMNS[table]
    fks = _swap(conn, table, column)
    if table == "measurement_rollups":
        conn.exec_driver_sql(f"ALTER TABLE {table} DROP COLUMN id")
    else:
        conn.exec_driver_sql(f"ALTER SEQUENCE {table}_id_seq OWNED BY {table}.id")
    partitions.create_default(conn, table)
    today = partitions.today(datetime.now(UTC))
    oldest = conn.exec_driver_sql(f"SELECT min({column}) FROM {table}_old").scalar()
    first = max(partitions.today(oldest) if oldest else today,
                today - timedelta(days=MAX_BACK_DAYS))
    partitions.ensure_table_days(conn, table, min(first, today),
                                 today + timedelta(days=partitions.AHEAD_DAYS))
    _fill(conn, table, NEW[table], fks)


def _unpartition(conn: sa.Connection, table: str) -> None:
    fks = _swap(conn, table, None)
    if table == "measurement_rollups":
        conn.exec_driver_sql(f"CREATE SEQUENCE {table}_id_seq")
        conn.exec_driver_sql(f"ALTER TABLE {table} ADD COLUMN id bigint NOT NULL "
                             f"DEFAULT nextval('{table}_id_seq')")
    conn.exec_driver_sql(f"ALTER SEQUENCE {table}_id_seq OWNED BY {table}.id")
    _fill(conn, table, OLD[table], fks)


def _upgrade_postgresql(conn: sa.Connection) -> None:
    for table in REFERRING:
        conn.exec_driver_sql(f"ALTER TABLE {table} DROP CONSTRAINT {_fk(table)}")
    for table in UNINDEXED:
        conn.exec_driver_sql(f"DROP INDEX ix_{table}_report_id")
    for name in DROPPED:
        conn.exec_driver_sql(f"ALTER TABLE measurements DROP COLUMN {name}")
    conn.exec_driver_sql("DROP INDEX ix_measurements_measured_at")
    conn.exec_driver_sql("CREATE INDEX ix_measurements_measured_at ON measurements "
                         "USING brin (measured_at)")
    for table in partitions.PARTITIONED:
        conn.exec_driver_sql(f"ALTER TABLE {table} DROP CONSTRAINT pk_{table}")
    for table in NEW:
        _partition(conn, table)
    conn.exec_driver_sql(f"ALTER TABLE judged_tests SET (fillfactor = {FILLFACTOR})")


def _downgrade_postgresql(conn: sa.Connection) -> None:
    conn.exec_driver_sql("ALTER TABLE judged_tests SET (fillfactor = 50)")
    for table in NEW:
        _unpartition(conn, table)
    for table, column in partitions.PARTITIONED.items():
        conn.exec_driver_sql(f"ALTER TABLE {table} ADD CONSTRAINT pk_{table} "
                             f"PRIMARY KEY (id, {column})")
    conn.exec_driver_sql("DROP INDEX ix_measurements_measured_at")
    conn.exec_driver_sql("CREATE INDEX ix_measurements_measured_at ON measurements "
                         "(measured_at)")
    for name, type_ in DROPPED.items():
        kind = type_.compile(dialect=conn.dialect)
        conn.exec_driver_sql(f"ALTER TABLE measurements ADD COLUMN {name} {kind} NOT NULL "
                             f"DEFAULT {DEFAULTS[name]}")
        conn.exec_driver_sql(f"ALTER TABLE measurements ALTER COLUMN {name} DROP DEFAULT")
    for table in UNINDEXED:
        conn.exec_driver_sql(f"CREATE INDEX ix_{table}_report_id ON {table} (report_id)")
    for table in REFERRING:  # rows whose report was pruned before go: the cascade's state
        conn.exec_driver_sql(f"DELETE FROM {table} t WHERE NOT EXISTS "
                             f"(SELECT 1 FROM reports r WHERE r.id = t.report_id)")
        conn.exec_driver_sql(f"ALTER TABLE {table} ADD CONSTRAINT {_fk(table)} FOREIGN KEY "
                             f"(report_id) REFERENCES reports (id) ON DELETE CASCADE")


def _upgrade_sqlite() -> None:
    for table in REFERRING:
        with op.batch_alter_table(table) as batch:
            batch.drop_constraint(_fk(table), type_="foreignkey")
            if table in UNINDEXED:
                batch.drop_index(f"ix_{table}_report_id")
            if table == "measurements":
                for name in DROPPED:
                    batch.drop_column(name)
    for table in ("reports", "job_snapshots"):
        new, old = NEW[table].uniques, OLD[table].uniques
        with op.batch_alter_table(table) as batch:
            for name in old:
                batch.drop_constraint(name, type_="unique")
            for name, columns in new.items():
                batch.create_unique_constraint(name, columns)
    _rollups_sqlite(with_id=False)


def _downgrade_sqlite() -> None:
    _rollups_sqlite(with_id=True)
    for table in ("reports", "job_snapshots"):
        new, old = NEW[table].uniques, OLD[table].uniques
        with op.batch_alter_table(table) as batch:
            for name in new:
                batch.drop_constraint(name, type_="unique")
            for name, columns in old.items():
                batch.create_unique_constraint(name, columns)
    for table in REFERRING:
        with op.batch_alter_table(table) as batch:
            if table == "measurements":
                for name, type_ in DROPPED.items():
                    batch.add_column(sa.Column(name, type_, nullable=False,
                                               server_default=sa.text(DEFAULTS[name])))
            if table in UNINDEXED:
                batch.create_index(f"ix_{table}_report_id", ["report_id"])
            batch.create_foreign_key(_fk(table), "reports", ["report_id"], ["id"],
                                     ondelete="CASCADE")


def _rollups_sqlite(with_id: bool) -> None:
    """SQLite: measurement_rollups made again, keyed by its id (0027) or its key (0029)."""
    key = [sa.Column("id", sa.Integer(), primary_key=True)] if with_id else []
    columns = [sa.Column(c, sa.Integer() if c in ("host_id", "src", "dst") else
                         sa.String(16) if c == "test" else sa.DateTime(timezone=True),
                         sa.ForeignKey("hosts.id", ondelete="CASCADE",
                                       name="fk_measurement_rollups_new_host_id_hosts")
                         if c == "host_id" else None,
                         nullable=False, primary_key=not with_id) for c in ROLLUP_KEY]
    rest = [sa.Column("count", sa.Integer(), nullable=False),
            *(sa.Column(c, sa.Float()) for c in ("min", "max", "sum")),
            sa.Column("contended_count", sa.Integer(), nullable=False),
            sa.Column("error_count", sa.Integer(), nullable=False)]
    op.create_table("measurement_rollups_new", *key, *columns, *rest)
    names = ", ".join(c.name for c in [*columns, *rest])
    op.execute(f"INSERT INTO measurement_rollups_new ({names}) SELECT {names} "
               "FROM measurement_rollups")
    op.drop_table("measurement_rollups")
    op.rename_table("measurement_rollups_new", "measurement_rollups")
    with op.batch_alter_table("measurement_rollups", recreate="always") as batch:
        batch.drop_constraint("fk_measurement_rollups_new_host_id_hosts", type_="foreignkey")
        batch.create_foreign_key("fk_measurement_rollups_host_id_hosts", "hosts",
                                 ["host_id"], ["id"], ondelete="CASCADE")
        if with_id:
            batch.create_unique_constraint("uq_measurement_rollups_host_id_src_dst_test_hour",
                                           ROLLUP_KEY)
    op.create_index("ix_measurement_rollups_hour", "measurement_rollups", ["hour"])


def upgrade() -> None:
    conn = op.get_bind()
    if conn.dialect.name == "postgresql":
        _upgrade_postgresql(conn)
    else:
        _upgrade_sqlite()


def downgrade() -> None:
    conn = op.get_bind()
    if conn.dialect.name == "postgresql":
        _downgrade_postgresql(conn)
    else:
        _downgrade_sqlite()
