"""Day partitions of the raw history tables on PostgreSQL: created ahead, dropped whole.

On PostgreSQL (after migration 0007) `measurements`, `link_samples` and `gpu_samples` are
range-partitioned by their time column, one partition per UTC day (`measurements_p20261201`
holds [2026-12-01, 2026-12-02)), plus a `_default` partition that catches any row outside
the days made so far (a probe with a wrong clock, a spool delivering very old reports), so
an insert never fails for want of a partition and a report is still stored whole or not at
all. Why a day: at 1000 8-GPU hosts one day of measurements is ~57 M rows, the unit
retention removes; a week would be ~400 M rows per partition and keep up to 6 days too much.

The maintenance job (`app/store/retention.py`, one replica at a time under its advisory
lock) calls `ensure_days` to make the next days ahead and `drop_days_before` to remove
whole expired days: `DROP TABLE` of a partition instead of `DELETE` of millions of rows.
A new day is made as a plain table, filled with any of its rows that had landed in the
default partition, then attached; `ATTACH PARTITION` takes only a SHARE UPDATE EXCLUSIVE
lock on the parent, so ingest and reads go on meanwhile.

Primary keys include the partition column (`(id, measured_at)`, `(id, at)`); the models keep
`id` alone, which is what SQLite uses and what the ORM needs (ids come from one sequence per
table, so `id` stays unique). `reports` is not partitioned: it is one row per report, the
target of the ON DELETE CASCADE foreign keys and of the unique `report_id` that makes
ingest idempotent across replicas.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time, timedelta

from sqlalchemy import Connection, text

# table -> its partition column
PARTITIONED = {"measurements": "measured_at", "link_samples": "at", "gpu_samples": "at"}
DAY = timedelta(days=1)
AHEAD_DAYS = 3
_PARTITION = re.compile(r"^(?P<table>measurements|link_samples|gpu_samples)_"
                        r"(?:p(?P<day>\d{8})|default)$")


def is_partition(name: str | None) -> bool:
    """A partition's name (the schema compare looks at the parent tables only)."""
    return bool(name and _PARTITION.match(name))


def include_name(name: str | None, type_: str, parent_names: object) -> bool:
    """Alembic's compare filter: the partitioned parents are compared, their days are not."""
    return not (type_ == "table" and is_partition(name))


def partition_name(table: str, day: date) -> str:
    return f"{table}_p{day:%Y%m%d}"


def _start(day: date) -> datetime:
    return datetime.combine(day, time(), tzinfo=UTC)


def is_partitioned(conn: Connection) -> bool:
    if conn.dialect.name != "postgresql":
        return False
    kind = conn.execute(text("SELECT relkind FROM pg_class WHERE oid = "
                             "to_regclass('measurements')")).scalar()
    return kind == "p"


def days(conn: Connection, table: str) -> list[date]:
    """The days `table` has a partition for, oldest first."""
    names = conn.execute(text(
        "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
        "WHERE i.inhparent = to_regclass(:t)"), {"t": table}).scalars()
    out = []
    for name in names:
        m = _PARTITION.match(name)
        if m and m["day"]:
            out.append(datetime.strptime(m["day"], "%Y%m%d").date())
    return sorted(out)


def create_default(conn: Connection, table: str) -> None:
    conn.execute(text(f"CREATE TABLE {table}_default PARTITION OF {table} DEFAULT"))


def create_day(conn: Connection, table: str, day: date) -> None:
    """Make `day`'s partition, moving its rows out of the default partition first."""
    name, column = partition_name(table, day), PARTITIONED[table]
    conn.execute(text(f"CREATE TABLE {name} (LIKE {table} INCLUDING DEFAULTS)"))
    conn.execute(text(
        f"WITH moved AS (DELETE FROM {table}_default WHERE {column} >= :lo AND {column} < :hi "
        f"RETURNING *) INSERT INTO {name} SELECT * FROM moved"),
        {"lo": _start(day), "hi": _start(day + DAY)})
    attach_day(conn, table, day)


def attach_day(conn: Connection, table: str, day: date) -> None:
    """Attach the plain table `partition_name(table, day)` (made LIKE `table` and holding
    only that day's rows) as a partition: its indexes and keys are built on the way in."""
    name, column = partition_name(table, day), PARTITIONED[table]
    lo, hi = _start(day).isoformat(), _start(day + DAY).isoformat()
    # The CHECK lets ATTACH skip scanning the new table; it is redundant afterwards.
    conn.execute(text(f"ALTER TABLE {name} ADD CONSTRAINT {name}_in_day CHECK "
                      f"({column} IS NOT NULL AND {column} >= '{lo}' AND {column} < '{hi}')"))
    conn.execute(text(f"ALTER TABLE {table} ATTACH PARTITION {name} "
                      f"FOR VALUES FROM ('{lo}') TO ('{hi}')"))
    conn.execute(text(f"ALTER TABLE {name} DROP CONSTRAINT {name}_in_day"))


def ensure_days(conn: Connection, first: date, last: date) -> list[str]:
    """Make every missing day partition in [first, last] of each table; their names."""
    return [name for table in PARTITIONED for name in ensure_table_days(conn, table, first, last)]


def ensure_table_days(conn: Connection, table: str, first: date, last: date) -> list[str]:
    have, made = set(days(conn, table)), []
    day = first
    while day <= last:
        if day not in have:
            create_day(conn, table, day)
            made.append(partition_name(table, day))
        day += DAY
    return made


def today(now: datetime) -> date:
    return now.astimezone(UTC).date()


def drop_days_before(conn: Connection, cutoff: datetime) -> list[str]:
    """Drop every day partition that ends at or before `cutoff`; their names."""
    dropped = []
    for table in PARTITIONED:
        for day in days(conn, table):
            if _start(day + DAY) <= cutoff:
                conn.execute(text(f"DROP TABLE {partition_name(table, day)}"))
                dropped.append(partition_name(table, day))
    return dropped


def prune_default(conn: Connection, cutoff: datetime) -> dict[str, int]:
    """DELETE the few rows older than `cutoff` that live in the default partitions."""
    out = {}
    for table, column in PARTITIONED.items():
        result = conn.execute(text(f"DELETE FROM {table}_default WHERE {column} < :cutoff"),
                              {"cutoff": cutoff})
        out[table] = max(result.rowcount or 0, 0)
    return out
