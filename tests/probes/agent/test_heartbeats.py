"""The agent sends a full report only when something the server judges changed (or a
keyframe is due, or the server asks), and a heartbeat otherwise (probes/agent/changes.py):
against a REAL server (create_app on SQLite, uvicorn on a loopback port), on a fake clock."""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from peerwatch.app.demo.server import ServerThread
from peerwatch.app.main import create_app
from peerwatch.probes.agent.changes import KEYFRAME_S
from peerwatch.probes.agent.outbox import Delivery
from peerwatch.probes.agent.runner import ProbeRuntime, open_runtime
from peerwatch.probes.agent.sender import Outcome
from peerwatch.probes.agent.worker import MIN_WAIT_S
from peerwatch.probes.config import ProbeSettings
from peerwatch.probes.heartbeat import HEARTBEATS_PATH
from peerwatch.probes.report import Report, ReportKind
from peerwatch.probes.sim.faults import LinksDown
from peerwatch.probes.sim.simulated import SimulatedFabric
from tests.probes.fakeclock import FakeClock
from tests.probes.live_server import TOKEN, free_port, live_server, server_settings, stored

Agent = tuple[ProbeRuntime, FakeClock, SimulatedFabric, list[Report]]


@contextmanager
def agent(tmp_path: Path, url: str) -> Iterator[Agent]:
    """A runtime on a fake clock (one sweep at its start, then inventories every 30 s); the
    reports it sends in full are recorded."""
    clock = FakeClock()
    fabric = SimulatedFabric("h200x2", clock=clock, seed=5)
    settings = ProbeSettings(server_url=url, token=TOKEN, spool_dir=tmp_path / "spool",
                             inventory_interval_s=30, sweep_interval_s=86_400,
                             sweep_jitter_s=1, request_timeout_s=5)
    full: list[Report] = []
    with open_runtime(settings, fabric=fabric, clock=clock, sleep=clock.sleep,
                      rng=random.Random(3)) as runtime:
        stamp = runtime.worker._stamp  # only a report sent in full is stamped
        runtime.worker._stamp = lambda report: full.append(stamp(report)) or full[-1]
        try:
            yield runtime, clock, fabric, full
        finally:
            fabric.close()


def advance(rt: ProbeRuntime, clock: FakeClock, seconds: float) -> None:
    """The worker's loop for `seconds` more, its schedule kept (`run` starts a new one:
    a sweep at once)."""
    worker, end = rt.worker, clock.now + seconds
    if not worker.next_inventory_at:  # the first call: the loop's own start
        worker.run(until=end)
        return
    while clock.now < end:
        worker._turn(clock.now)
        clock.sleep(max(MIN_WAIT_S, min(worker._next_wake(end), end) - clock.now))


def test_full_first_then_heartbeats_full_on_change_and_keyframe(tmp_path: Path) -> None:
    settings = server_settings(tmp_path / "server")
    with live_server(settings) as server, agent(tmp_path, server.url) as (rt, clock, fab, full):
        advance(rt, clock, 200)
        first = [ReportKind.INVENTORY, ReportKind.SWEEP]  # the first of each: in full
        assert [r.kind for r in full] == first
        beats = rt.worker.changes.heartbeats
        assert beats >= 5 and rt.worker.stats.deliveries[Delivery.HEARTBEAT] == beats
        fab.inject(LinksDown(gpu=0, links=(0,)))  # the inventory changes
        advance(rt, clock, 31)
        assert [r.kind for r in full] == [*first, ReportKind.INVENTORY]
        assert rt.worker.changes.heartbeats == beats  # that pass went in full
        advance(rt, clock, 90)
        assert len(full) == 3 and rt.worker.changes.heartbeats > beats  # unchanged since
        advance(rt, clock, KEYFRAME_S)
        assert len(full) == 4  # the keyframe: in full though nothing changed
        assert len(rt.outbox.spool) == 0
    assert sorted(stored(settings).report_ids) == sorted(r.report_id for r in full)


def test_a_server_that_lost_the_host_is_sent_a_full_report_at_once(tmp_path: Path) -> None:
    settings, port = server_settings(tmp_path / "server"), free_port()
    with agent(tmp_path, f"http://127.0.0.1:{port}") as (rt, clock, _, full):
        with live_server(settings, port=port):
            advance(rt, clock, 100)
            assert len(full) == 2 and rt.worker.changes.heartbeats >= 2
        with live_server(settings, port=port):  # restarted: the report is in its database
            beats = rt.worker.changes.heartbeats
            advance(rt, clock, 31)
            assert rt.worker.changes.heartbeats == beats + 1 and len(full) == 2
        wiped = server_settings(tmp_path / "wiped")  # a fresh database: the host is unknown
        with live_server(wiped, port=port):
            advance(rt, clock, 31)
            assert rt.worker.changes.resyncs == 1  # asked (409) and obeyed in the same pass
            assert len(full) == 3 and full[-1].kind is ReportKind.INVENTORY
            beats = rt.worker.changes.heartbeats
            advance(rt, clock, 60)
            assert rt.worker.changes.heartbeats > beats  # on the new full report
    assert sorted(stored(settings).report_ids) == sorted(r.report_id for r in full[:2])
    assert stored(wiped).report_ids == [full[2].report_id]


def test_a_change_while_the_server_is_away_is_spooled_and_delivered(tmp_path: Path) -> None:
    settings, port = server_settings(tmp_path / "server"), free_port()
    with agent(tmp_path, f"http://127.0.0.1:{port}") as (rt, clock, fab, full):
        with live_server(settings, port=port):
            advance(rt, clock, 100)
        advance(rt, clock, 60)  # away: its heartbeats are not kept
        assert len(rt.outbox.spool) == 0
        assert rt.worker.stats.deliveries.get(Delivery.SKIPPED, 0) >= 1
        fab.inject(LinksDown(gpu=1, links=(0, 1)))
        advance(rt, clock, 120)  # the change: in full, spooled
        away = len(rt.outbox.spool)
        assert away >= 1 and len(full) == 2 + away
        with live_server(settings, port=port):
            advance(rt, clock, 900)  # back: the spool drains
        assert len(rt.outbox.spool) == 0
    ids = stored(settings).report_ids
    assert sorted(ids) == sorted(r.report_id for r in full)  # every full report, once
    down = [r for r in full if any(p.state != "up" for p in r.inventory.nvlinks)]
    assert down and all(r.report_id in ids for r in down)


class _WithoutHeartbeats:
    """The server as a release before heartbeats answers their path: 404."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == HEARTBEATS_PATH:
            await send({"type": "http.response.start", "status": 404,
                        "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": b'{"detail":"Not Found"}'})
            return
        await self.app(scope, receive, send)


def test_a_server_without_heartbeats_gets_full_reports(tmp_path: Path) -> None:
    """An older server (no heartbeat route: 404): full reports for the next hour."""
    settings = server_settings(tmp_path / "server")
    app = create_app(settings)
    app.add_middleware(_WithoutHeartbeats)
    server = ServerThread(app).start()
    try:
        with agent(tmp_path, server.url) as (rt, clock, _, full):
            advance(rt, clock, 200)
            assert rt.worker.changes.heartbeats == 0
            assert rt.outbox.stats.by_outcome.get(Outcome.UNAUTHORIZED) == 1  # one 404 only
            assert len(full) >= 7 and len(rt.outbox.spool) == 0  # every pass in full
    finally:
        server.stop()
    assert sorted(stored(settings).report_ids) == sorted(r.report_id for r in full)
