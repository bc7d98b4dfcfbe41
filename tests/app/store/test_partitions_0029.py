"""Migration 0029 on PostgreSQL with data: reports and rollups move into month partitions,
job snapshots into day partitions, nothing is lost, a retry is still a duplicate, and
maintenance drops a whole expired month of reports and rollups instead of deleting rows."""

from __future__ import annotations

import uuid
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
BEFORE = "0027"
TABLES = ("reports", "measurement_rollups", "job_snapshots", "measurements", "link_samples")
AGES = (430, 40, 3, 0)  # days: 430 is older than any month made -> the default partition


def _migrate(engine: Engine, revision: str, down: bool = False) -> None:
    with engine.connect() as conn:
        (command.downgrade if down else command.upgrade)(alembic_config(conn), revision)
        conn.commit()


def _post(client: TestClient, body: str) -> dict:
    r = client.post("/api/v1/reports", content=body,
                    headers={**probe_headers(), "Content-Type": "application/json"})
    assert r.status_code in (200, 201), r.text
    return r.json()


def _scalar(engine: Engine, sql: str, **params: object) -> object:
    with engine.connect() as conn:
        return conn.execute(text(sql), params).scalar()


def _counts(engine: Engine) -> dict[str, int]:
    return {t: int(_scalar(engine, f"SELECT count(*) FROM {t}")) for t in TABLES}  # type: ignore[arg-type]


def _snapshot(engine: Engine, at: datetime) -> None:
    with engine.begin() as conn:
        conn.execute(text(
            "INSERT INTO job_snapshots (snapshot_id, host, job_id, phase, taken_at, "
            "received_at, digest, body) VALUES (:s, 'node-a', '7', 'prolog', :at, :at, "
            "'0', '{}')"), {"s": uuid.uuid4(), "at": at})


@pytest.fixture
def pg_at_0027() -> Iterator[tuple[Settings, Engine, str]]:
    """A database at 0027 holding reports, rollups and job snapshots of the past 400 days
    (posted at head, then migrated down), and the newest report's body."""
    with throwaway_pg_database("peerwatch_test") as url:
        settings = Settings(database_url=url, probe_tokens=[PROBE_TOKEN])
        engine = make_engine(settings)
        _migrate(engine, "head")
        bodies = [sweep(n=2, at=NOW - timedelta(days=d, hours=2),
                        counters={(0, 0): 1}).model_dump_json() for d in AGES]
        with JudgedClient(create_app(settings)) as client:
            for body in bodies:
                _post(client, body)
        keep = Settings(database_url=url, retention_raw_days=500.0,
                        retention_rollup_days=500.0)
        run_maintenance(engine, keep, now=NOW)  # rollups of every hour, nothing pruned
        for days in AGES:
            _snapshot(engine, NOW - timedelta(days=days))
        _migrate(engine, BEFORE, down=True)
        try:
            yield settings, engine, bodies[-1]
        finally:
            engine.dispose()


def test_0029_moves_a_populated_database_and_drops_whole_months(
        pg_at_0027: tuple[Settings, Engine, str]) -> None:
    settings, engine, newest = pg_at_0027
    before = _counts(engine)
    assert before["measurement_rollups"] > 0 and before["job_snapshots"] == len(AGES)
    assert {_scalar(engine, "SELECT relkind FROM pg_class WHERE oid = to_regclass(:t)",
                    t=t) for t in partitions.MONTHLY} == {"r"}

    _migrate(engine, "head")
    assert _counts(engine) == before
    for table in (*partitions.MONTHLY, "job_snapshots"):
        assert _scalar(engine, "SELECT relkind FROM pg_class WHERE oid = to_regclass(:t)",
                       t=table) == "p"
    with engine.connect() as conn:
        months = partitions.days(conn, "reports")
    assert partitions.today(NOW).replace(day=1) in months
    assert _scalar(engine, "SELECT count(*) FROM reports_default") == 1  # 430 days old

    with JudgedClient(create_app(settings)) as client:  # a retry is still a duplicate
        assert _post(client, newest)["duplicate"] is True
    assert _counts(engine)["reports"] == before["reports"]

    # a year's retention, a month later: the month of the 40-day-old report goes whole
    later = NOW + timedelta(days=31)
    lapsed = partitions.partition_name("reports", partitions.today(NOW - timedelta(days=40)))
    out = run_maintenance(engine, Settings(database_url=settings.database_url,
                                           retention_rollup_days=60.0), now=later)
    assert lapsed in out.dropped
    assert out.pruned is not None and out.pruned["reports"] == 1  # the default's old row
    assert _scalar(engine, "SELECT count(*) FROM reports") == 2

    _migrate(engine, BEFORE, down=True)  # and back
    assert _scalar(engine, "SELECT relkind FROM pg_class WHERE oid = to_regclass('reports')") \
        == "r"
