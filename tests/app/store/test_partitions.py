"""PostgreSQL day partitions: migration 0007 converts a populated database (and back),
ingest stays whole-or-nothing and idempotent, maintenance makes days ahead and drops whole
expired days, rows outside the made days land in the default partition and are kept."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from alembic import command
from fastapi.testclient import TestClient
from sqlalchemy import Engine, text

from peerwatch.app.main import create_app
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store import partitions
from peerwatch.app.store.db import alembic_config, make_engine
from peerwatch.app.store.retention import run_maintenance
from tests.app.conftest import PROBE_TOKEN, probe_headers, throwaway_pg_database
from tests.app.factory import sweep
from tests.app.judged_client import JudgedClient

NOW = datetime.now(UTC).replace(microsecond=0)
BEFORE = "0006"  # the revision 0007 follows
TABLES = ("measurements", "link_samples", "gpu_samples", "reports")


def _migrate(engine: Engine, revision: str, down: bool = False) -> None:
    with engine.connect() as conn:
        (command.downgrade if down else command.upgrade)(alembic_config(conn), revision)
        conn.commit()


def _post(client: TestClient, at: datetime) -> None:
    r = client.post("/api/v1/reports", content=sweep(n=2, at=at,
                                                     counters={(0, 0): 1}).model_dump_json(),
                    headers={**probe_headers(), "Content-Type": "application/json"})
    assert r.status_code == 201, r.text


def _counts(engine: Engine) -> dict[str, int]:
    with engine.connect() as conn:
        return {t: conn.execute(text(f"SELECT count(*) FROM {t}")).scalar_one() for t in TABLES}


def _relkind(engine: Engine, table: str) -> str:
    with engine.connect() as conn:
        return conn.execute(text("SELECT relkind FROM pg_class WHERE oid = to_regclass(:t)"),
                            {"t": table}).scalar_one()


@pytest.fixture
def pg_before_0007() -> Iterator[tuple[Settings, Engine]]:
    """A database at BEFORE holding reports of the past 400 days. They are posted at head
    (the app's models need every later column) and the database is then migrated down:
    0007's downgrade moves the rows back into plain tables."""
    with throwaway_pg_database("peerwatch_test") as url:
        settings = Settings(database_url=url, probe_tokens=[PROBE_TOKEN])
        engine = make_engine(settings)
        _migrate(engine, "head")
        with JudgedClient(create_app(settings)) as client:
            for days_ago in (400, 20, 3, 1, 0):  # 400 days: older than any day made -> default
                _post(client, NOW - timedelta(days=days_ago, minutes=5))
        _migrate(engine, BEFORE, down=True)
        try:
            yield settings, engine
        finally:
            engine.dispose()


def test_migration_converts_a_populated_database_and_back(
        pg_before_0007: tuple[Settings, Engine]) -> None:
    settings, engine = pg_before_0007
    assert all(_relkind(engine, t) == "r" for t in partitions.PARTITIONED)
    before = _counts(engine)
    assert before["measurements"] > 0 and before["link_samples"] > 0
    _migrate(engine, "head")
    for table in partitions.PARTITIONED:
        assert _relkind(engine, table) == "p"
        with engine.connect() as conn:
            key = conn.execute(text(
                "SELECT array_agg(a.attname::text ORDER BY a.attname) FROM pg_index i "
                "JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey) "
                "WHERE i.indrelid = to_regclass(:t) AND i.indisprimary"), {"t": table}).scalar()
            assert key is None  # 0029: no primary key index (ids unique by their sequence)
            days = partitions.days(conn, table)
            in_default = conn.execute(text(f"SELECT count(*) FROM {table}_default")).scalar()
        assert partitions.today(NOW) + timedelta(days=partitions.AHEAD_DAYS) in days
        assert partitions.today(NOW - timedelta(days=20, minutes=5)) in days
        assert in_default > 0  # the 400-day-old report's rows
    assert _counts(engine) == before

    report = sweep(host="node-b", n=2, at=NOW).model_dump_json()
    with JudgedClient(create_app(settings)) as client:
        first, replay = (client.post("/api/v1/reports", content=report, headers={
            **probe_headers(), "Content-Type": "application/json"}).json() for _ in range(2))
    assert (first["duplicate"], replay["duplicate"]) == (False, True)
    assert replay["measurements"] == first["measurements"] > 0
    assert _counts(engine)["reports"] == before["reports"] + 1

    # since 0029 nothing cascades from a report: each table goes by its own time
    for table in partitions.MONTHLY:
        assert _relkind(engine, table) == "p"
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM reports"))
    left = _counts(engine)
    assert left["reports"] == 0
    assert left["measurements"] == before["measurements"] + first["measurements"]

    _migrate(engine, BEFORE, down=True)
    assert all(_relkind(engine, t) == "r" for t in partitions.PARTITIONED)


def test_maintenance_makes_days_ahead_and_drops_whole_expired_days(pg_database: str) -> None:
    settings = Settings(database_url=pg_database, probe_tokens=[PROBE_TOKEN],
                        retention_raw_days=14.0)
    engine = make_engine(settings)
    try:
        with engine.begin() as conn:
            conn.execute(text("TRUNCATE reports, hosts RESTART IDENTITY CASCADE"))
            # today's days, as a running server's maintenance keeps them: under xdist another
            # test of this worker's database may have migrated it down and up, or pruned it
            partitions.ensure_days(conn, partitions.today(NOW),
                                   partitions.today(NOW) + timedelta(days=partitions.AHEAD_DAYS))
        old = NOW - timedelta(days=17)
        with JudgedClient(create_app(settings)) as client:
            _post(client, old)
            _post(client, NOW)
            _post(client, NOW - timedelta(days=60))  # a spool delivering a very old report
        with engine.connect() as conn:  # no days made for the old two: stored whole, in the
            ahead = {t: conn.execute(text(f"SELECT count(*) FROM {t}_default")).scalar()
                     for t in partitions.PARTITIONED}  # default partitions
        assert ahead["measurements"] == 2 * 2 and ahead["link_samples"] == 2
        # As of 17 days ago the old rows get their own day, moved out of the default partition;
        # the 60-day-old rows, past retention, are deleted from it.
        out = run_maintenance(engine, settings, now=old + timedelta(minutes=30))
        assert out.pruned is not None and out.pruned["measurements"] == 2
        with engine.connect() as conn:
            assert partitions.today(old) in partitions.days(conn, "measurements")
            assert conn.execute(text("SELECT count(*) FROM measurements_default")).scalar() == 0
        out = run_maintenance(engine, settings, now=NOW)
        assert partitions.partition_name("measurements", partitions.today(old)) in out.dropped
        with engine.connect() as conn:
            days = partitions.days(conn, "measurements")
            oldest = conn.execute(text("SELECT min(measured_at) FROM measurements")).scalar()
        assert min(days) > partitions.today(NOW - timedelta(days=16))
        assert partitions.today(NOW) + timedelta(days=partitions.AHEAD_DAYS) in days
        assert oldest is not None and oldest > NOW - timedelta(days=1)
        assert _counts(engine)["reports"] == 3  # reports stay a year: replays stay no-ops
    finally:
        engine.dispose()
