"""A host's history is read by its key ids (`pair_samples`, the seeding's and the history
probe's read). On PostgreSQL, before a day partition has statistics (its first minutes, or
for good where autovacuum is off), a list of 416 ids looked like the whole partition and
the read scanned it: every new host's seeding paid a scan of the day. `of_keys` gives the
ids so that the planner reads the key_id index; the plan of the statement the read really
sends is checked here, before and after ANALYZE."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Engine, event, text
from sqlalchemy.orm import Session

from peerwatch.app.queries.common import pair_samples
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store import partitions
from peerwatch.app.store.db import make_engine
from tests.app.conftest import throwaway_pg_database
from tests.app.store.migrating import migrate

HOSTS, KEYS, SWEEPS = 400, 416, 3  # 0.5 M rows of one day, as a fleet's warm-up writes


def _fill(engine: Engine, now: datetime) -> None:
    with engine.begin() as conn:
        conn.execute(text(
            "INSERT INTO hosts (name, fabric, first_seen) SELECT 'h' || h, 'x', now() "
            "FROM generate_series(1, :n) h"), {"n": HOSTS})
        conn.execute(text(
            "INSERT INTO measurement_keys (host_id, test, src, dst, gpus, ident) "
            "SELECT h.id, 'ce_write', k / 8, k % 8, '', 'ce_write ' || k FROM hosts h, "
            "generate_series(0, :k - 1) k"), {"k": KEYS})
        conn.execute(text(
            "INSERT INTO measurements (report_id, measured_at, value, contended, key_id) "
            "SELECT s, :at - s * interval '10 minutes', 1.0, false, k.id "
            "FROM measurement_keys k, generate_series(0, :s - 1) s"),
            {"at": now, "s": SWEEPS})


def _plan_of_the_read(engine: Engine, since: datetime) -> str:
    sent: list[tuple[str, Any]] = []

    def keep(_conn: Any, _cursor: Any, statement: str, params: Any, *_: Any) -> None:
        if "FROM measurements" in statement:
            sent.append((statement, params))

    event.listen(engine, "before_cursor_execute", keep)
    try:
        with Session(engine) as session:
            host = session.scalar(text("SELECT id FROM hosts WHERE name = 'h7'"))
            found = pair_samples(session, host, since)
            assert sum(len(v) for v in found.values()) == KEYS * SWEEPS
    finally:
        event.remove(engine, "before_cursor_execute", keep)
    [(statement, params)] = sent
    with engine.connect() as conn:
        cursor = conn.connection.driver_connection.cursor()  # type: ignore[union-attr]
        cursor.execute("EXPLAIN " + statement, params)
        return "\n".join(row[0] for row in cursor.fetchall())


def test_a_hosts_history_is_read_through_the_key_index_with_or_without_statistics() -> None:
    with throwaway_pg_database("peerwatch_plan") as url:
        engine = make_engine(Settings(database_url=url))
        try:
            migrate(engine, "head")
            now = datetime.now(UTC).replace(hour=12)
            _fill(engine, now)
            since = now - timedelta(hours=6)
            with engine.connect() as conn:
                analyzed = conn.execute(text(
                    "SELECT count(*) FROM pg_stat_user_tables WHERE relname LIKE "
                    "'measurements%' AND (last_analyze IS NOT NULL OR "
                    "last_autoanalyze IS NOT NULL)")).scalar()
            assert analyzed == 0, "the partition was to have no statistics yet"
            day = partitions.partition_name("measurements", now.date())
            plan = _plan_of_the_read(engine, since)  # (the empty days ahead: scanned, 0 pages)
            assert f"Seq Scan on {day}" not in plan and f"{day}_key_id_idx" in plan, plan
            with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                conn.execute(text("ANALYZE measurements"))
            plan = _plan_of_the_read(engine, since)
            assert f"Seq Scan on {day}" not in plan and f"{day}_key_id_idx" in plan, plan
        finally:
            engine.dispose()
