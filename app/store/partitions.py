"""Time partitions on PostgreSQL: created ahead, dropped whole.

On PostgreSQL the history tables are range-partitioned by their time column:
- by UTC day (after migration 0007) the raw samples, `measurements`, `link_samples` and
  `gpu_samples`, and (after 0029) `job_snapshots`: `measurements_p20261201` holds
  [2026-12-01, 2026-12-02). They are kept `retention_raw_days`.
- by UTC month (after migration 0029) what is kept a year, `reports` and
  `measurement_rollups`: `reports_m202612` holds December 2026. A month, not a day: a
  year of days would be 365 partitions whose indexes a report_id lookup (the duplicate
  check of every report) probes one by one; 13 months cost 13 probes.
Each also has a `_default` partition that catches any row outside the periods made so far
(a probe with a wrong clock, a spool delivering very old reports), so an insert never
fails for want of a partition and a report is still stored whole or not at all. Why a day
for raw samples: at 1000 8-GPU hosts one day of measurements is ~57 M rows, the unit
retention removes.

The maintenance job (`app/store/retention.py`, one replica at a time under its advisory
lock) calls `ensure_days` to make the next periods ahead and `drop_before` to remove
whole expired ones: `DROP TABLE` of a partition instead of `DELETE` of millions of rows
(and no ON DELETE CASCADE from `reports` into the samples: since 0029 nothing references a
report row, each table goes by its own time). A new period is made as a plain table,
filled with any of its rows that had landed in the default partition, then attached;
`ATTACH PARTITION` takes only a SHARE UPDATE EXCLUSIVE lock on the parent, so ingest and
reads go on meanwhile.

Primary and unique keys include the partition column (`(id, finished_at)`, `(report_id,
finished_at)`); the raw samples have none since 0029 (nothing looks one up by id, and the
index was 15-20 % of their bytes). The models keep `id` alone as the primary key, which is
what SQLite uses and what the ORM needs (ids come from one sequence per table, so `id`
stays unique).
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time, timedelta

from sqlalchemy import Connection, text

# table -> its partition column. PARTITIONED: migration 0007's raw samples, by day;
# DAILY and MONTHLY: migration 0029's.
PARTITIONED = {"measurements": "measured_at", "link_samples": "at", "gpu_samples": "at"}
DAILY = PARTITIONED | {"job_snapshots": "taken_at"}
MONTHLY = {"reports": "finished_at", "measurement_rollups": "hour"}
COLUMNS = DAILY | MONTHLY
DAY = timedelta(days=1)
AHEAD_DAYS = 3
_PARTITION = re.compile(r"^(?P<table>" + "|".join(COLUMNS) + r")_"
                        r"(?:p(?P<day>\d{8})|m(?P<month>\d{6})|default)$")


def is_partition(name: str | None) -> bool:
    """A partition's name (the schema compare looks at the parent tables only)."""
    return bool(name and _PARTITION.match(name))


def include_name(name: str | None, type_: str, parent_names: object) -> bool:
    """Alembic's compare filter: the partitioned parents are compared, their days are not."""
    return not (type_ == "table" and is_partition(name))


def partition_name(table: str, day: date) -> str:
    """The partition of `table` holding `day` (a month table's: of the month holding it)."""
    if table in MONTHLY:
        return f"{table}_m{day:%Y%m}"
    return f"{table}_p{day:%Y%m%d}"


def period_start(table: str, day: date) -> date:
    """The first day of the partition of `table` holding `day`."""
    return day.replace(day=1) if table in MONTHLY else day


def next_period(table: str, start: date) -> date:
    if table in MONTHLY:
        return (start.replace(day=1) + timedelta(days=32)).replace(day=1)
    return start + DAY


def _start(day: date) -> datetime:
    return datetime.combine(day, time(), tzinfo=UTC)


def is_partitioned(conn: Connection, table: str = "measurements") -> bool:
    if conn.dialect.name != "postgresql":
        return False
    kind = conn.execute(text("SELECT relkind FROM pg_class WHERE oid = to_regclass(:t)"),
                        {"t": table}).scalar()
    return kind == "p"


def days(conn: Connection, table: str) -> list[date]:
    """The days `table` has a partition for (a month table: each month's first), oldest
    first."""
    names = conn.execute(text(
        "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
        "WHERE i.inhparent = to_regclass(:t)"), {"t": table}).scalars()
    out = []
    for name in names:
        m = _PARTITION.match(name)
        if m and m["day"]:
            out.append(datetime.strptime(m["day"], "%Y%m%d").date())
        elif m and m["month"]:
            out.append(datetime.strptime(m["month"], "%Y%m").date())
    return sorted(out)


def create_default(conn: Connection, table: str) -> None:
    conn.execute(text(f"CREATE TABLE {table}_default PARTITION OF {table} DEFAULT"))


def create_day(conn: Connection, table: str, day: date) -> None:
    """Make the partition holding `day`, moving its rows out of the default partition
    first."""
    day = period_start(table, day)
    name, column = partition_name(table, day), COLUMNS[table]
    conn.execute(text(f"CREATE TABLE {name} (LIKE {table} INCLUDING DEFAULTS)"))
    names = ", ".join(f'"{c}"' for c in column_names(conn, table))
    conn.execute(text(
        f"WITH moved AS (DELETE FROM {table}_default WHERE {column} >= :lo AND {column} < :hi "
        f"RETURNING *) INSERT INTO {name} ({names}) SELECT {names} FROM moved"),
        {"lo": _start(day), "hi": _start(next_period(table, day))})
    attach_day(conn, table, day)


def column_names(conn: Connection, table: str) -> list[str]:
    """The columns of `table` in its order. By name, not position, a default partition's
    rows move to a new period: partitions made before migration 0034 keep the old column
    order of `measurements` (a partition's order may differ from its parent's)."""
    return list(conn.execute(text(
        "SELECT attname FROM pg_attribute WHERE attrelid = to_regclass(:t) AND attnum > 0 "
        "AND NOT attisdropped ORDER BY attnum"), {"t": table}).scalars())


def attach_day(conn: Connection, table: str, day: date) -> None:
    """Attach the plain table `partition_name(table, day)` (made LIKE `table` and holding
    only that period's rows) as a partition: its indexes and keys are built on the way in."""
    day = period_start(table, day)
    name, column = partition_name(table, day), COLUMNS[table]
    lo, hi = _start(day).isoformat(), _start(next_period(table, day)).isoformat()
    # The CHECK lets ATTACH skip scanning the new table; it is redundant afterwards.
    conn.execute(text(f"ALTER TABLE {name} ADD CONSTRAINT {name}_in_day CHECK "
                      f"({column} IS NOT NULL AND {column} >= '{lo}' AND {column} < '{hi}')"))
    conn.execute(text(f"ALTER TABLE {table} ATTACH PARTITION {name} "
                      f"FOR VALUES FROM ('{lo}') TO ('{hi}')"))
    conn.execute(text(f"ALTER TABLE {name} DROP CONSTRAINT {name}_in_day"))


def partitioned_tables(conn: Connection) -> list[str]:
    """The tables of COLUMNS that are partitioned in this database (none on SQLite)."""
    if conn.dialect.name != "postgresql":
        return []
    found = set(conn.execute(text(
        "SELECT t FROM unnest(CAST(:t AS text[])) AS t JOIN pg_class c "
        "ON c.oid = to_regclass(t) WHERE c.relkind = 'p'"), {"t": list(COLUMNS)}).scalars())
    return [t for t in COLUMNS if t in found]


def ensure_days(conn: Connection, first: date, last: date,
                tables: list[str] | None = None) -> list[str]:
    """Make every missing partition covering [first, last] of each partitioned table
    (`tables`: of those only); their names."""
    tables = partitioned_tables(conn) if tables is None else tables
    return [name for table in tables for name in ensure_table_days(conn, table, first, last)]


def ensure_table_days(conn: Connection, table: str, first: date, last: date) -> list[str]:
    have, made = set(days(conn, table)), []
    day = period_start(table, first)
    while day <= last:
        if day not in have:
            create_day(conn, table, day)
            made.append(partition_name(table, day))
        day = next_period(table, day)
    return made


def today(now: datetime) -> date:
    return now.astimezone(UTC).date()


def drop_days_before(conn: Connection, cutoff: datetime,
                     tables: list[str] | None = None) -> list[str]:
    """Drop every partition (of `tables`, by default 0007's raw ones) that ends at or before
    `cutoff`; their names."""
    dropped = []
    for table in PARTITIONED if tables is None else tables:
        for day in days(conn, table):
            if _start(next_period(table, day)) <= cutoff:
                conn.execute(text(f"DROP TABLE {partition_name(table, day)}"))
                dropped.append(partition_name(table, day))
    return dropped


def prune_default(conn: Connection, cutoff: datetime,
                  tables: list[str] | None = None) -> dict[str, int]:
    """DELETE the few rows older than `cutoff` that live in the default partitions."""
    out = {}
    for table in PARTITIONED if tables is None else tables:
        column = COLUMNS[table]
        result = conn.execute(text(f"DELETE FROM {table}_default WHERE {column} < :cutoff"),
                              {"cutoff": cutoff})
        out[table] = max(result.rowcount or 0, 0)
    return out
