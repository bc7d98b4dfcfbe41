"""Truthful under overload: a refused probe was heard from, its host reads "server busy",
and clock skew is measured from the request's arrival and the probe's send time, never from
how long a report waited in a spool or for an ingest slot."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from peerwatch.app.alerting.settings import AlertingSettings
from peerwatch.app.ingest.rows import CLOCK_TRANSIT_BOUND_S, clock_reading, ingest
from peerwatch.app.judging.service import AlertingService
from peerwatch.app.judging.sessions import make_sessionmaker
from peerwatch.app.queries.health import host_health
from peerwatch.app.routes import reports
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.db import make_engine
from peerwatch.app.store.tables.alerts import Alert
from peerwatch.app.store.tables.inventory import Host
from peerwatch.probes.agent.sender import HOST_HEADER, SENT_AT_HEADER
from tests.app.factory import sweep
from tests.probes.live_server import TOKEN, live_server, server_settings

HEADERS = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
LIMIT_S = 60.0


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch) -> Iterator[threading.Event]:
    """Every ingest waits for the returned event before it stores: the slot stays taken."""
    release, entered = threading.Event(), threading.Event()
    real = reports.store_body

    def slow(*args: Any, **kw: Any) -> Any:
        entered.set()
        release.wait(LIMIT_S)
        return real(*args, **kw)

    monkeypatch.setattr(reports, "store_body", slow)
    release.entered = entered  # type: ignore[attr-defined]
    yield release
    release.set()


def _until(check: Any, what: str) -> Any:
    deadline = time.monotonic() + LIMIT_S
    while time.monotonic() < deadline:
        if (found := check()):
            return found
        time.sleep(0.05)
    raise AssertionError(f"not within {LIMIT_S:g} s: {what}")


def _node_a(base: str) -> dict[str, Any] | None:
    hosts = httpx.get(f"{base}/api/v1/hosts", timeout=10).json()["hosts"]
    return next((h for h in hosts if h["host"] == "node-a"), None)


def test_a_refused_report_is_counted_for_its_host_and_shown_as_busy(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = server_settings(tmp_path).model_copy(update={
        "ingest_concurrency": 1, "ingest_queue": 0})
    with live_server(settings) as server:
        base = server.url
        first = httpx.post(f"{base}/api/v1/reports", content=sweep(n=2).model_dump_json(),
                           headers=HEADERS, timeout=30)
        assert first.status_code == 201
        judged = _until(lambda: (h := _node_a(base)) and h["judged_at"] and h, "judged")
        assert judged["busy"] is None and judged["refused_reports"] == 0
        release, entered = threading.Event(), threading.Event()
        real = reports.store_body

        def slow(*args: Any, **kw: Any) -> Any:
            entered.set()
            release.wait(LIMIT_S)
            return real(*args, **kw)

        monkeypatch.setattr(reports, "store_body", slow)
        holder = threading.Thread(target=lambda: httpx.post(
            f"{base}/api/v1/reports", content=sweep(n=2, host="node-b").model_dump_json(),
            headers=HEADERS, timeout=LIMIT_S))
        holder.start()
        try:
            assert entered.wait(LIMIT_S)  # the one slot is taken: the next is refused
            for _ in range(3):
                refused = httpx.post(f"{base}/api/v1/reports", content=b"{}", timeout=10,
                                     headers={**HEADERS, HOST_HEADER: "node-a"})
                assert refused.status_code == 429
            busy = _until(lambda: (h := _node_a(base)) and h["refused_reports"] == 3 and h,
                          "three refusals written")
            assert busy["busy"] == (f"not judged since {judged['judged_at'][11:16]} UTC: "
                                    "server busy, 3 reports refused")
            assert busy["last_refused_at"] is not None and not busy["stale"]
            health = httpx.get(f"{base}/api/v1/hosts/node-a/health", timeout=10).json()
            assert health["busy"] == busy["busy"]
            metrics = httpx.get(f"{base}/metrics", timeout=10).text
            assert 'peerwatch_host_refused_reports{host="node-a"} 3.0' in metrics
            assert 'peerwatch_probe_last_refused_timestamp_seconds{host="node-a"}' in metrics
        finally:
            release.set()
            holder.join(LIMIT_S)
        again = httpx.post(f"{base}/api/v1/reports", content=sweep(n=2).model_dump_json(),
                           headers=HEADERS, timeout=30)
        assert again.status_code == 201  # stored: it is no longer refused
        calm = _until(lambda: (h := _node_a(base)) and h["refused_reports"] == 0 and h,
                      "refusals cleared by the stored report")
        assert calm["busy"] is None


def test_a_probe_refused_for_longer_than_the_stale_limit_is_not_stale(
        settings: Settings) -> None:
    """Its newest stored report is older than the limit, but the server refused one of its
    reports a moment ago: heard from, so no ProbeStale and the host is not stale."""
    engine = make_engine(settings)
    sessions = make_sessionmaker(engine)
    try:
        now = datetime.now(UTC)
        report = sweep(n=2, at=now - timedelta(hours=1))
        with sessions() as session:
            ingest(session, report, settings, now - timedelta(hours=1))
            session.get(Host, 1).last_refused_at = now - timedelta(seconds=5)  # type: ignore[union-attr]
            session.get(Host, 1).refused_reports = 40  # type: ignore[union-attr]
            session.commit()
        assert_heard_then_stale(sessions, settings, now)  # and once refusals stop, stale
    finally:
        engine.dispose()


def assert_heard_then_stale(sessions: sessionmaker[Session], settings: Settings,
                            now: datetime) -> None:
    """node-a, heard a moment before `now` though its stored report is old: not stale and
    no alert at `now`; stale, with ProbeStale, once the limit has passed with nothing heard."""
    service = AlertingService(sessions, settings, AlertingSettings())
    service.evaluate_host("node-a", now)
    with sessions() as session:
        assert not host_health(session, settings, "node-a").stale
        assert session.scalars(select(Alert.rule)).all() == []
    service.evaluate_host("node-a", now + timedelta(seconds=settings.stale_after_s + 10))
    with sessions() as session:
        assert host_health(session, settings, "node-a").stale
        assert "ProbeStale" in session.scalars(select(Alert.rule)).all()


def test_clock_skew_is_read_from_the_send_time_not_the_time_a_report_waited() -> None:
    arrived = datetime.now(UTC)
    late = sweep(n=2, at=arrived - timedelta(minutes=6))  # spooled for 6 min, clock right
    assert clock_reading(late, arrived, arrived - timedelta(seconds=0.2)) == pytest.approx(0.2)
    assert clock_reading(late, arrived, None) is None  # an older probe: not bounded
    fresh = sweep(n=2, at=arrived - timedelta(seconds=10))
    held_s = (arrived - fresh.finished_at).total_seconds()
    assert 0 <= held_s <= CLOCK_TRANSIT_BOUND_S
    assert clock_reading(fresh, arrived, None) == pytest.approx(held_s)
    ahead = sweep(n=2, at=arrived + timedelta(minutes=5))  # a clock ahead shows either way
    reading = clock_reading(ahead, arrived, None)
    assert reading is not None and reading < -290
    slow_clock = arrived - timedelta(minutes=10)  # a clock 10 min behind shows from its send time
    assert clock_reading(late, arrived, slow_clock) == pytest.approx(600.0)


def test_clock_skew_is_measured_at_arrival_before_the_slot_wait(
        tmp_path: Path, held: threading.Event) -> None:
    """A report that waits for an ingest slot is not 'late': skew is taken at its arrival."""
    settings = server_settings(tmp_path).model_copy(update={
        "ingest_concurrency": 1, "ingest_queue": 4, "ingest_wait_s": 30.0})
    with live_server(settings) as server:
        base = server.url
        blocker = threading.Thread(target=lambda: httpx.post(
            f"{base}/api/v1/reports", content=sweep(n=2, host="node-b").model_dump_json(),
            headers=HEADERS, timeout=LIMIT_S))
        blocker.start()
        assert held.entered.wait(LIMIT_S)  # type: ignore[attr-defined]
        sent = datetime.now(UTC)
        waiting: list[httpx.Response] = []
        waiter = threading.Thread(target=lambda: waiting.append(httpx.post(
            f"{base}/api/v1/reports", content=sweep(n=2, at=sent).model_dump_json(),
            headers={**HEADERS, SENT_AT_HEADER: sent.isoformat()}, timeout=LIMIT_S)))
        waiter.start()
        _until(lambda: httpx.get(f"{base}/readyz", timeout=10).json()["ingest"]["waiting"],
               "the report waits for the slot")
        time.sleep(1.5)  # it keeps waiting: a slot wait must not count as clock skew
        held.set()
        for thread in (blocker, waiter):
            thread.join(LIMIT_S)
        assert waiting[0].status_code == 201
    engine = make_engine(settings)
    try:
        with make_sessionmaker(engine)() as session:
            skew = session.scalar(select(Host.clock_skew_s).where(Host.name == "node-a"))
    finally:
        engine.dispose()
    assert skew is not None and skew < 1.0
