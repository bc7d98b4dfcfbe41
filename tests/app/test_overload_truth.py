"""Truthful under overload, for real: a `peerwatch serve` process offered about three times
what it can take by probes that keep trying (each the probe's own Sender, Outbox and Spool,
reports built by the simulated fabric as they go): new reports for a minute, then the two
minutes' backlog that leaves in the spools, replayed as fast as the refusals allow — about
three minutes saturated in all.

It refuses (429/503), but it never blames the probes: no `ProbeStale` (a refused probe was
heard from) and no `ProbeClockSkew` (skew is read from the probe's send time at arrival,
never from the time a report waited) for any host, in any state, at any time; every report
a probe handed over is stored exactly once; and once the load stops and the spools drain,
every host is judged after its newest report, healthy, fresh, and no longer "busy". On
SQLite and PostgreSQL. The test waits on conditions (with generous limits), never on a POST.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from bench.helpers.serve import serve_process
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.db import make_engine
from peerwatch.app.store.tables.alerts import Alert, AlertEvent
from peerwatch.app.store.tables.history import ReportRow
from peerwatch.probes.agent.outbox import Outbox
from peerwatch.probes.agent.sender import Backoff, Sender, SendResult
from peerwatch.probes.agent.spool import Spool
from peerwatch.probes.report import Report, TestName
from peerwatch.probes.sim.simulated import SimulatedFabric
from peerwatch.probes.sweep import SweepOptions, build_report
from tests.parallel import SATURATES

TOKEN = "tok"
PROBES = 12
LOAD_S = 60.0  # new reports for a minute; the backlog keeps it saturated two more
OVERLOAD = 3.0
# The backlog drains at whatever the server takes now, which other work on the machine (make
# test's other workers, CPU burners) can cut well below the capacity measured at the start:
# draining goes on while any spool shrinks, and fails only after STALL_S without progress
# (a correct server always makes some) or after DRAIN_MAX_S in all.
STALL_S = 120.0
DRAIN_MAX_S = 1200.0
JUDGED_S = 300.0  # generous: 12 hosts judged once the load is over
CALM_S = 5.0  # once the load stops, each probe still reports this often (its cadence)
STALE_S = 15.0  # a probe unheard of this long is stale: well inside the load's two minutes
ENV = {"PEERWATCH_PROBE_TOKENS": TOKEN, "PEERWATCH_INGEST_CONCURRENCY": "1",
       "PEERWATCH_INGEST_QUEUE": "2", "PEERWATCH_INGEST_WAIT_S": "0.5",
       "PEERWATCH_INGEST_RETRY_AFTER_S": "1", "PEERWATCH_STALE_AFTER_S": str(STALE_S),
       "PEERWATCH_ALERT_EVAL_INTERVAL_S": "1", "PEERWATCH_CLOCK_SKEW_WARN_S": "5",
       "PEERWATCH_ALERT_FOR_S": '{"ProbeClockSkew": 0}'}
OPTIONS = SweepOptions(tests=(TestName.CE_WRITE, TestName.LATENCY))
# Each backend's run saturates the machine for minutes: under make test's parallel workers
# they and the other saturating tests run on one worker, one after the other.
pytestmark = SATURATES


class RecordingSender(Sender):
    def __init__(self, *args: Any, answers: list[SendResult], **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.answers = answers

    def send(self, report: Any) -> SendResult:
        answer = super().send(report)
        self.answers.append(answer)
        return answer


def _build(p: int, k: int) -> Report:
    return build_report(SimulatedFabric("h200x2", seed=p * 1000 + k, hostname=f"node-{p}"),
                        options=OPTIONS)


CAPACITY_HOST = f"node-{PROBES + 1}"  # what measures the capacity, then falls silent


def _capacity_per_s(base: str) -> float:
    """Reports per second the server takes one at a time (its capacity, measured here)."""
    with httpx.Client(timeout=60, headers={"Authorization": f"Bearer {TOKEN}",
                                           "Content-Type": "application/json"}) as client:
        bodies = [_build(PROBES + 1, k).model_dump_json() for k in range(6)]
        client.post(f"{base}/api/v1/reports", content=bodies[0])  # first host: warm
        started = time.perf_counter()
        for body in bodies[1:]:
            assert client.post(f"{base}/api/v1/reports", content=body).status_code == 201
        return (len(bodies) - 1) / (time.perf_counter() - started)


def _probe(base: str, spool_dir: Path, p: int, every_s: float, end: float,
           answers: list[SendResult], handed: list[Report], drained: Barrier) -> int:
    """Hand a fresh report to the outbox every `every_s` until `end`, replaying what was
    refused as the backoff allows; then drain the spool, still reporting every CALM_S (a
    probe keeps its cadence: a drained one is not silent) until every probe has drained.
    Returns what is left in its spool."""
    sender = RecordingSender(base, TOKEN, 10.0, answers=answers)
    outbox = Outbox(sender, Spool(spool_dir, 64 << 20), Backoff(0.2, 2.0, random.Random(p)),
                    time.monotonic)
    try:
        due, k = time.monotonic() + random.Random(p).random() * every_s, 0
        while time.monotonic() < end:
            if time.monotonic() >= due:
                report = _build(p, k)
                handed.append(report)
                outbox.submit(report)
                due, k = due + every_s, k + 1
            replay_at = outbox.replay_due_at()
            if replay_at is not None and replay_at <= time.monotonic():
                outbox.replay()
            time.sleep(min(0.05, max(0.0, due - time.monotonic())))
        deadline, due, arrived = time.monotonic() + DRAIN_MAX_S, time.monotonic() + CALM_S, False
        spooled = len(outbox.spool)
        drained.moved()  # the stall is counted from the drain's start
        while time.monotonic() < deadline and not drained.stalled():
            if len(outbox.spool) < spooled:
                drained.moved()
            spooled = len(outbox.spool)
            if not arrived and not len(outbox.spool):
                arrived = drained.arrive()
            if drained.done() and not len(outbox.spool):
                break
            if time.monotonic() >= due and not drained.done():
                report = _build(p, k)
                handed.append(report)
                outbox.submit(report)
                due, k = due + CALM_S, k + 1
            at = outbox.replay_due_at()
            if at is not None and at <= time.monotonic():
                outbox.replay()
            time.sleep(0.1)
        return len(outbox.spool)
    finally:
        outbox.close()


class Barrier:
    """Every probe's spool has drained once (then each stops); and whether any spool still
    shrinks (`moved`, `stalled`)."""

    def __init__(self, parties: int) -> None:
        self._left = parties
        self._lock = threading.Lock()
        self._all = threading.Event()
        self._moved_at = time.monotonic()

    def moved(self) -> None:
        with self._lock:
            self._moved_at = time.monotonic()

    def stalled(self) -> bool:
        """No probe's spool shrank for STALL_S."""
        with self._lock:
            return time.monotonic() - self._moved_at > STALL_S

    def arrive(self) -> bool:
        with self._lock:
            self._left -= 1
            if self._left <= 0:
                self._all.set()
        return True

    def done(self) -> bool:
        return self._all.is_set()


def _until(check: Callable[[], Any], within_s: float, what: str) -> Any:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if found := check():
            return found
        time.sleep(0.5)
    raise AssertionError(f"not within {within_s:g} s: {what}")


def _all_judged(base: str) -> list[dict[str, Any]] | None:
    hosts = httpx.get(f"{base}/api/v1/hosts", timeout=60).json()["hosts"]
    probes = [h for h in hosts if h["host"] != CAPACITY_HOST]
    if len(probes) == PROBES and all(
            h["judged_at"] and h["last_received_at"] and h["judged_at"] >= h["last_received_at"]
            for h in probes):
        return probes
    return None


@pytest.mark.timeout(2400)  # ~1 min of load + the backlog, however slowly a loaded box drains
def test_three_times_its_capacity_for_minutes_and_nothing_false(
        db_url: str, tmp_path: Path) -> None:
    answers: list[SendResult] = []
    handed: list[Report] = []
    with serve_process(db_url, tmp_path / "server", ENV) as base:
        capacity = _capacity_per_s(base)
        every_s = PROBES / (OVERLOAD * capacity)  # each probe's share of 3x the capacity
        end = time.monotonic() + LOAD_S
        threads, left, drained = [], [-1] * PROBES, Barrier(PROBES)

        def run(p: int) -> None:
            left[p] = _probe(base, tmp_path / f"spool-{p}", p, every_s, end, answers, handed,
                             drained)

        for p in range(PROBES):
            threads.append(threading.Thread(target=run, args=(p,)))
            threads[-1].start()
        for thread in threads:
            thread.join(LOAD_S + DRAIN_MAX_S + 60)
        assert left == [0] * PROBES  # every probe's spool drained
        calm = [_build(p, 10_000) for p in range(PROBES)]  # the load is over: one report each
        with httpx.Client(timeout=60, headers={"Authorization": f"Bearer {TOKEN}"}) as http:
            for report in calm:
                r = http.post(f"{base}/api/v1/reports", content=report.model_dump_json(),
                              headers={"Content-Type": "application/json"})
                assert r.status_code == 201, r.text
        handed += calm
        hosts = _until(lambda: _all_judged(base), JUDGED_S, "every host judged after its newest")
        ready = httpx.get(f"{base}/readyz", timeout=60).json()
    codes = [a.status for a in answers]
    refused = codes.count(429) + codes.count(503)
    assert set(codes) <= {200, 201, 429, 503}, [a.describe() for a in answers]
    assert [(h["host"], h["verdict"], h["stale"], h["busy"]) for h in hosts] == [
        (f"node-{p}", "healthy", False, None) for p in sorted(range(PROBES), key=str)], hosts
    assert ready["judge"]["failed"] == 0
    engine = make_engine(Settings(database_url=db_url))
    try:
        with engine.connect() as conn:
            stored = conn.execute(select(ReportRow.report_id)).scalars().all()
            events = conn.execute(select(Alert.rule, Alert.host, AlertEvent.state, AlertEvent.at)
                                  .join(AlertEvent, AlertEvent.alert_id == Alert.id)
                                  .where(Alert.host != CAPACITY_HOST)).all()  # it fell silent
            rules = {e.rule for e in events}
    finally:
        engine.dispose()
    assert len(stored) == len(set(stored))  # none twice
    assert {r.report_id for r in handed} <= set(stored)  # none lost
    assert not rules & {"ProbeStale", "ProbeClockSkew"}, events
    # overloaded: it refused reports. How many depends on how much faster it takes reports
    # concurrently than one at a time (with judging off the request path, 757 of 5364 here,
    # 14 %), so the count is reported, not bounded.
    assert refused > 0, ("never overloaded", capacity, len(handed), refused)
