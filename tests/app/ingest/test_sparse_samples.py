"""Sparse NVLink and RDMA port rows (app/ingest/sparse_links.py, sparse_nics.py): a reading
that says nothing new of a port writes no row, and the readers put the left-out readings
back, so the judge's rates and verdicts and the link charts read what every reading kept
gave; on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime, timedelta

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from peerwatch.app.analysis.nic_health import JUDGED, NicLimits, Reading, judge_nics
from peerwatch.app.analysis.rates import rate_per_s
from peerwatch.app.judging.sessions import make_sessionmaker
from peerwatch.app.queries.counters import link_rates
from peerwatch.app.queries.link_series import COUNTERS, _series_of
from peerwatch.app.queries.nics import port_readings
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.db import make_engine
from peerwatch.app.store.inventory_memo import MEMO_KEY, InventoryMemo
from peerwatch.app.store.tables.history import LINK_IDLE_KEYFRAME_S, LINK_KEYFRAME_S, LinkSample
from peerwatch.app.store.tables.inventory import Host
from peerwatch.app.store.tables.nics import NicPortSample
from peerwatch.probes.report import Report, ReportKind
from peerwatch.probes.sim import faults
from tests.app.alerting.simhost import SimHost
from tests.app.conftest import probe_headers
from tests.app.factory import T0, sweep

Readings = dict[tuple[int, int], list[tuple[datetime, int, int]]]  # port -> (at, tx, replay)


def _post(client: TestClient, report: Report, memo: str = "kept") -> None:
    if memo == "lost":  # another worker stored the report before, or a restart
        client.app.state.sessionmaker.kw["info"][MEMO_KEY] = InventoryMemo()  # type: ignore[attr-defined]
    r = client.post("/api/v1/reports", content=report.model_dump_json(),
                    headers={**probe_headers(), "Content-Type": "application/json"})
    assert r.status_code == 201, r.text


def _report(at: datetime, readings: Readings, i: int) -> Report:
    """An inventory report at `at` with each port's i-th reading."""
    return sweep(at=at, tests=(), kind=ReportKind.INVENTORY,
                 counters={port: points[i][1] for port, points in readings.items()},
                 error_counts={port: points[i][2] for port, points in readings.items()})


def _post_all(client: TestClient, readings: Readings, memo: str = "kept") -> None:
    times = [at for at, _, _ in next(iter(readings.values()))]
    for i, at in enumerate(times):
        _post(client, _report(at, readings, i), memo)


def _stored(settings: Settings) -> tuple[list[tuple[timedelta, tuple[int, int]]], int]:
    engine = make_engine(settings)
    try:
        with Session(engine) as s:
            rows = s.execute(select(LinkSample.at, LinkSample.gpu, LinkSample.link)
                             .order_by(LinkSample.at, LinkSample.gpu, LinkSample.link)).all()
            host_id = s.scalar(select(Host.id))
    finally:
        engine.dispose()
    assert host_id is not None
    return [(_aware(at) - T0, (g, k)) for at, g, k in rows], host_id


def _rates(settings: Settings, host_id: int, since: datetime) -> dict:
    engine = make_engine(settings)
    try:
        with Session(engine) as s:
            return link_rates(s, host_id, since)
    finally:
        engine.dispose()


def _every_reading(readings: Readings, since: datetime) -> dict[tuple[int, int], float | None]:
    """Each port's replay rate over every reading from `since` on (what a dense store read)."""
    return {port: rate_per_s([(at, r) for at, _, r in points if at >= since])
            for port, points in readings.items()}


@pytest.mark.parametrize("memo", ["kept", "lost"])
def test_a_port_writes_a_row_only_when_it_moved_or_a_keyframe_is_due(
        client: TestClient, settings: Settings, memo: str) -> None:
    """Every 30 s until a reading past LINK_KEYFRAME_S, then once LINK_IDLE_KEYFRAME_S after
    the first: a port whose tx/rx moved is written every LINK_KEYFRAME_S, one whose error
    counter moved at once, an unmoved one only every LINK_IDLE_KEYFRAME_S; the judge's rates
    are every reading's."""
    assert LINK_KEYFRAME_S % 30 == 0  # a keyframe falls on a reading
    times = [T0 + timedelta(seconds=30 * i) for i in range(int(LINK_KEYFRAME_S // 30) + 2)]
    times.append(T0 + timedelta(seconds=LINK_IDLE_KEYFRAME_S))
    readings: Readings = {
        (0, 0): [(at, 100 + 1000 * i, 5) for i, at in enumerate(times)],  # moving traffic
        (0, 1): [(at, 100, 8 if i >= 6 else 5) for i, at in enumerate(times)],  # errors moved
        (1, 0): [(at, 100, 5) for at in times],  # idle
    }
    _post_all(client, readings, memo)
    rows, host_id = _stored(settings)
    keyframe, idle = timedelta(seconds=LINK_KEYFRAME_S), timedelta(seconds=LINK_IDLE_KEYFRAME_S)
    assert rows == [  # 7 of the readings
        (timedelta(0), (0, 0)), (timedelta(0), (0, 1)), (timedelta(0), (1, 0)),
        (timedelta(seconds=180), (0, 1)),  # its errors moved
        (keyframe, (0, 0)),  # moving, and its row LINK_KEYFRAME_S old
        (idle, (0, 0)), (idle, (1, 0))]  # (0, 1)'s newest row is not yet as old
    got = _rates(settings, host_id, T0)
    for port, rate in _every_reading(readings, T0).items():
        assert got[port]["replay"] == pytest.approx(rate), port
    assert got[(0, 1)]["replay"] > 0 and got[(1, 0)]["replay"] == 0.0


@pytest.mark.parametrize("offset_s", [0, 50])
def test_a_window_after_a_long_quiet_gap_reads_the_rates_of_every_reading(
        client: TestClient, settings: Settings, offset_s: int) -> None:
    """A full report every 5 min on an idle host for 55 min (under LINK_IDLE_KEYFRAME_S),
    then one port's errors grow: its newest row before the window is 45 min old, and the
    window's rates (starting at a reading, or between two) are still those of every
    reading."""
    times = [T0 + timedelta(minutes=5 * i) for i in range(12)]
    readings: Readings = {
        (0, 0): [(at, 100, 5) for at in times],
        (0, 1): [(at, 100, 5 + 4 * max(0, i - 8)) for i, at in enumerate(times)],
        (1, 0): [(at, 100, 5) for at in times],
    }
    _post_all(client, readings)
    rows, host_id = _stored(settings)
    assert len(rows) == 3 + 3  # the first reading, and (0, 1)'s three moves
    since = times[7] + timedelta(seconds=offset_s)
    got = _rates(settings, host_id, since)
    for port, rate in _every_reading(readings, since).items():
        assert got[port]["replay"] == pytest.approx(rate), port
    assert got[(0, 1)]["replay"] > 0


def test_an_idle_port_charts_what_every_reading_charted(client: TestClient,
                                                        settings: Settings) -> None:
    """The link chart of a port left out as a repeat is that of every reading (rate 0 in
    each bucket with a reading), a moving port's that of its keyframes, as before."""
    times = [T0 + timedelta(seconds=30 * i) for i in range(int(LINK_KEYFRAME_S // 30) + 12)]
    readings: Readings = {
        (0, 0): [(at, 100, 5) for at in times],  # idle
        (0, 1): [(at, 100 + 1000 * i, 5) for i, at in enumerate(times)],  # moving
    }
    _post_all(client, readings)
    since = times[4] + timedelta(seconds=10)
    series = client.get("/api/v1/hosts/node-a/links/series", params={
        "since": since.isoformat(), "until": times[-1].isoformat(), "step": 60, "gpu": 0})
    assert series.status_code == 200, series.text
    points = {(x["gpu"], x["link"]): x["points"] for x in series.json()["links"]}

    def charted(port: tuple[int, int], keep: list[datetime]) -> list[dict]:
        rows = [(at, tx, tx, r, r, r, r, r) for at, tx, r in readings[port]
                if at >= since and at in keep]
        assert len(COUNTERS) == len(rows[0]) - 1
        return [p.model_dump(mode="json") for p in _series_of(rows, 60)]

    keyframes = [at for at in times if (at - T0).total_seconds() % LINK_KEYFRAME_S == 0]
    assert points[(0, 0)] == charted((0, 0), times)
    assert points[(0, 1)] == charted((0, 1), keyframes)
    assert points[(0, 0)] and all(p["tx_bps"] == 0 for p in points[(0, 0)])


@pytest.fixture
def sim_sessions(settings: Settings) -> Iterator[sessionmaker[Session]]:
    engine = make_engine(settings)
    yield make_sessionmaker(engine)
    engine.dispose()


@pytest.mark.parametrize("memo", ["kept", "lost"])
def test_nic_readings_left_out_are_read_back_as_every_reading(
        sim_sessions: sessionmaker[Session], settings: Settings, memo: str) -> None:
    """A simulated hgx8 host's 8 RDMA ports every 30 s, their traffic counters moving, one
    of them gaining symbol errors for a while: only the readings whose judged values moved
    are stored (every port of them); the judge reads each port's states, judged counters,
    rates and verdict as when every reading was kept."""
    host = SimHost(sim_sessions, settings, preset="hgx8", hostname="nic-a")
    fault = faults.NicSymbolErrors(nic="mlx5_1", per_second=5.0)
    reports = []
    for i in range(24):
        if memo == "lost":
            sim_sessions.kw["info"][MEMO_KEY] = InventoryMemo()
        if i == 10:
            host.inject(fault)
        if i == 16:
            host.clear(fault)
        host.advance(30)
        reports.append(host.send())
    dense = [(s.at, p) for r in reports for s in r.counters for p in s.nic_ports]
    with sim_sessions() as s:
        stored = s.scalars(select(NicPortSample.at)).all()
        host_id = s.scalar(select(Host.id).where(Host.name == "nic-a"))
        assert host_id is not None
        windows = [reports[i].counters[0].at - timedelta(seconds=d)
                   for i, d in ((5, 0), (12, 10), (20, 0), (23, 45))]
        got = {since: port_readings(s, host_id, since) for since in windows}
    assert 0 < len(stored) < len(dense) // 2, (len(stored), len(dense))
    types = {p.device: None for _, p in dense}
    for since, readings in got.items():
        every: dict[tuple[str, int], list[Reading]] = {}
        for at, p in dense:
            if at >= since:
                every.setdefault((p.device, p.port), []).append(Reading(
                    at, p.state, p.phys_state, p.rate_gbps, p.link_layer, dict(p.counters)))
        assert _judged(readings) == _judged(every), since
        assert _verdicts(readings, types) == _verdicts(every, types), since
    judged = _verdicts(got[windows[1]], types)
    assert any(j.verdict.value == "degraded" for j in judged)  # the fault was seen


def _judged(ports: dict[tuple[str, int], list[Reading]]) -> dict:
    """Each port's readings as the NIC judge reads them: the judged counters only."""
    return {key: [r._replace(counters={k: v for k, v in r.counters.items() if k in JUDGED})
                  for r in readings] for key, readings in ports.items()}


def _verdicts(ports: dict[tuple[str, int], list[Reading]], types: dict) -> list:
    return [replace(j, counters={k: v for k, v in j.counters.items() if k in JUDGED})
            for j in judge_nics(ports, types, NicLimits())]


def _aware(at: datetime) -> datetime:
    return at if at.tzinfo else at.replace(tzinfo=T0.tzinfo)
