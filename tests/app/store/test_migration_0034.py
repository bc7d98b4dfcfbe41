"""Migration 0034 with data, on SQLite and PostgreSQL: a host's pair series (contended and
failed points with their foreign bytes), health and latest failures (a GPU set's among
them) answer the same before and after it, both ways; NULL stands for no foreign bytes and
an empty GPU set after it, 0 and [] again before it. On PostgreSQL a partition holding rows
from before keeps them and its column order, and takes new rows; the others are made in
the new order."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, inspect, select, text
from sqlalchemy.orm import Session

from peerwatch.app.alerting.context import FailedTest, HostContext
from peerwatch.app.main import create_app
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store import partitions
from peerwatch.app.store.db import make_engine
from peerwatch.app.store.tables.inventory import Host
from peerwatch.probes.report import Report, TestName, TransferResult, unit_of
from tests.app.conftest import PROBE_TOKEN, probe_headers, throwaway_pg_database
from tests.app.factory import healthy, sweep
from tests.app.judged_client import JudgedClient
from tests.app.store.migrating import fresh_url, migrate

HOST = "node-a"
NEW_ORDER = ["id", "report_id", "measured_at", "value", "foreign_bytes", "host_id", "src",
             "dst", "contended", "test", "gpus", "error", "throttle"]


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    yield from fresh_url(request, tmp_path)


def _report(at: datetime) -> Report:
    """Three GPUs' ce_write: 0->1 contended (8 GiB foreign), 1->0 failed, the rest idle;
    and a failed all-reduce over GPUs 0-2 (its set is only in `gpus`)."""
    report = sweep(host=HOST, n=3, at=at, contended=[(0, 1)], errors={(1, 0): "copy failed"})
    allreduce = TransferResult(test=TestName.ALLREDUCE, gpus=[0, 1, 2], value=None,
                               unit=unit_of(TestName.ALLREDUCE), error="nccl timeout",
                               started_at=at)
    return report.model_copy(update={"results": [*report.results, allreduce]})


def _post(settings: Settings, report: Report) -> None:
    with JudgedClient(create_app(settings)) as client:
        posted = client.post("/api/v1/reports", content=report.model_dump_json(),
                             headers={**probe_headers(), "Content-Type": "application/json"})
        assert posted.status_code == 201, posted.text


def _answers(settings: Settings, engine: Engine, since: datetime) -> list[Any]:
    until = since + timedelta(hours=2)
    window = f"since={quote(since.isoformat())}&until={quote(until.isoformat())}"
    with JudgedClient(create_app(settings)) as client:
        answers = [_get(client, f"/api/v1/hosts/{HOST}/series?src={s}&dst={d}&{window}")
                   for s, d in ((0, 1), (1, 0), (1, 2))]
        answers.append(_get(client, f"/api/v1/hosts/{HOST}/health"))
    return [*answers, _failures(settings, engine)]


def _get(client: TestClient, path: str) -> Any:
    answer = client.get(path)
    assert answer.status_code == 200, answer.text
    return {k: v for k, v in answer.json().items() if k != "generated_at"}


def _failures(settings: Settings, engine: Engine) -> list[FailedTest]:
    with Session(engine) as session:
        host = session.scalars(select(Host).where(Host.name == HOST)).one()
        # what the failures read: the host's newest sweep (no alerting settings or health)
        ctx = HostContext(session, host, datetime.now(UTC), settings,
                          None, None)  # type: ignore[arg-type]
        return ctx.latest_sweep_failures


KEYED = ("SELECT k.test, k.src, k.dst, m.foreign_bytes, CASE WHEN k.gpus = '' THEN NULL "
         "ELSE '[' || k.gpus || ']' END FROM measurements m JOIN measurement_keys k "
         "ON k.id = m.key_id ORDER BY k.test, k.src, k.dst")  # from 0036: a row's key


def _stored(engine: Engine) -> list[tuple[Any, ...]]:
    """(test, src, dst, foreign_bytes, gpus) of every row as stored, gpus as text."""
    with engine.connect() as conn:
        keyed = "measurement_keys" in inspect(conn).get_table_names()
        rows = conn.execute(text(KEYED if keyed else "SELECT test, src, dst, foreign_bytes, "
                                 "gpus FROM measurements ORDER BY test, src, dst"))
        return [(t, s, d, fb, g if g is None or isinstance(g, str) else str(g).replace(" ", ""))
                for t, s, d, fb, g in rows]


def test_0034_keeps_what_the_api_answers_both_ways(url: str) -> None:
    settings = Settings(database_url=url, probe_tokens=[PROBE_TOKEN])
    engine = make_engine(settings)
    at = (datetime.now(UTC) - timedelta(minutes=30)).replace(microsecond=0)
    try:
        migrate(engine, "head")
        _post(settings, _report(at))
        since = at - timedelta(minutes=30)
        at_head = _answers(settings, engine, since)
        assert at_head[0]["contended"][0]["foreign_bytes"] == 8 << 30
        assert at_head[1]["failures"][0]["foreign_bytes"] == 0
        assert {(f.test, tuple(f.gpus)) for f in at_head[-1]} == {
            ("ce_write", ()), ("allreduce", (0, 1, 2))}
        stored = _stored(engine)
        assert ("allreduce", None, None, None, "[0,1,2]") in stored
        assert ("ce_write", 0, 1, 8 << 30, None) in stored
        assert [r for r in stored if r[0] == "ce_write" and (r[1], r[2]) != (0, 1)] == [
            ("ce_write", s, d, None, None) for s, d in ((0, 2), (1, 0), (1, 2), (2, 0), (2, 1))]

        migrate(engine, "0033", down=True)
        down = _stored(engine)
        assert all(fb is not None and g is not None for _, _, _, fb, g in down)
        assert ("ce_write", 1, 2, 0, "[]") in down

        migrate(engine, "head")
        assert _answers(settings, engine, since) == at_head
    finally:
        engine.dispose()


def _columns(engine: Engine, table: str) -> list[str]:
    with engine.connect() as conn:
        return partitions.column_names(conn, table)


def _today_shortly_before(now: datetime) -> datetime:
    """Up to 30 min before `now`, whole seconds, but on `now`'s UTC day: the partitions the
    migrations make start today, so a row of yesterday would land in the default one."""
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    at = now - min(timedelta(minutes=30), (now - midnight) / 2)
    return max(at.replace(microsecond=0), midnight)


def test_0034_postgresql_keeps_a_partition_with_rows_as_it_is() -> None:
    with throwaway_pg_database("peerwatch_test") as url:
        settings = Settings(database_url=url, probe_tokens=[PROBE_TOKEN])
        engine = make_engine(settings)
        at = _today_shortly_before(datetime.now(UTC))
        today = partitions.partition_name("measurements", at.date())
        ahead = partitions.partition_name("measurements", at.date() + timedelta(days=2))
        try:
            migrate(engine, "0033")
            old_order = _columns(engine, today)
            assert old_order != NEW_ORDER
            with engine.begin() as conn:  # a row of before 0034, in today's partition
                host = conn.execute(text(
                    "INSERT INTO hosts (name, fabric, first_seen) VALUES ('old-host', 'x', "
                    ":at) RETURNING id"), {"at": at}).scalar()
                conn.execute(text(
                    "INSERT INTO measurements (report_id, host_id, test, src, dst, gpus, value, "
                    "contended, foreign_bytes, measured_at) VALUES (1, :h, 'ce_write', 0, 1, "
                    "'[]', :v, false, 0, :at)"),
                    {"h": host, "v": healthy(0, 1, TestName.CE_WRITE), "at": at})
            migrate(engine, "0034")
            assert _columns(engine, "measurements") == NEW_ORDER
            assert _columns(engine, ahead) == NEW_ORDER  # empty: made again
            assert _columns(engine, today) == old_order  # its rows kept where they were
            migrate(engine, "0035")  # 0035 drops `id`, keeping the order of the rest
            assert _columns(engine, today) == [c for c in old_order if c != "id"]
            migrate(engine, "head")  # 0036 makes it again, its row keyed (test_migration_0036)
            _post(settings, _report(at))  # NULLs into the partition of before
            with engine.connect() as conn:
                assert conn.execute(text(
                    f"SELECT count(*) FROM {today} WHERE foreign_bytes IS NULL")).scalar() == 6
                assert conn.execute(text(
                    f"SELECT foreign_bytes FROM {today} WHERE report_id = 1")).scalar() == 0
            migrate(engine, "0033", down=True)
            with engine.connect() as conn:
                assert conn.execute(text("SELECT count(*) FROM measurements WHERE "
                                         "foreign_bytes IS NULL OR gpus IS NULL")).scalar() == 0
        finally:
            engine.dispose()
