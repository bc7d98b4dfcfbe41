"""Overload, for real: `peerwatch serve` in a subprocess with one ingest slot and a queue of
two, hit by a dozen probes at once (each the probe's own Outbox, Sender and Spool).

Every answer is 201/200 or a refusal with Retry-After (429/503): never a 500 (SQLite's
"database is locked" included), never a timeout. `/healthz` keeps answering meanwhile. The
probes spool what was refused and retry after the Retry-After; in the end every report is
stored exactly once. On SQLite and PostgreSQL.
"""

from __future__ import annotations

import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
from sqlalchemy import func, select

from bench.helpers.serve import serve_process
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.db import make_engine
from peerwatch.app.store.tables.history import Measurement, ReportRow
from peerwatch.probes.agent.outbox import Outbox
from peerwatch.probes.agent.sender import Backoff, Sender, SendResult
from peerwatch.probes.agent.spool import Spool
from peerwatch.probes.report import Report, TestName
from peerwatch.probes.sim.simulated import SimulatedFabric
from peerwatch.probes.sweep import SweepOptions, build_report
from tests.parallel import SATURATES

PROBES = 12
REPORTS_EACH = 2
TOKEN = "tok"
SATURATED = {"PEERWATCH_INGEST_CONCURRENCY": "1", "PEERWATCH_INGEST_QUEUE": "2",
             "PEERWATCH_INGEST_WAIT_S": "0.5", "PEERWATCH_INGEST_RETRY_AFTER_S": "1"}

pytestmark = SATURATES  # a real server held past its capacity (tests/parallel.py)


class RecordingSender(Sender):
    """The probe's Sender, keeping every answer it got."""

    def __init__(self, *args: object, answers: list[SendResult], **kw: object) -> None:
        super().__init__(*args, **kw)  # type: ignore[arg-type]
        self.answers = answers

    def send(self, report: Report) -> SendResult:
        answer = super().send(report)
        self.answers.append(answer)
        return answer


def run_probe(base: str, spool_dir: Path, reports: list[Report],
              answers: list[SendResult], seed: int) -> int:
    """Submit `reports`, then replay the spool whenever the backoff allows, until empty."""
    sender = RecordingSender(base, TOKEN, 60.0, answers=answers)
    outbox = Outbox(sender, Spool(spool_dir, 64 << 20), Backoff(0.2, 5.0, random.Random(seed)),
                    time.monotonic)
    try:
        for report in reports:
            outbox.submit(report)
        deadline = time.monotonic() + 120
        while (due := outbox.replay_due_at()) is not None and time.monotonic() < deadline:
            time.sleep(max(0.0, due - time.monotonic()))
            outbox.replay()
        return len(outbox.spool)
    finally:
        outbox.close()


def poll_healthz(base: str, stop: threading.Event, codes: list[int | str]) -> None:
    with httpx.Client(timeout=10) as client:
        while not stop.is_set():
            try:
                codes.append(client.get(f"{base}/healthz").status_code)
            except httpx.TransportError as exc:
                codes.append(type(exc).__name__)
            time.sleep(0.02)


def _reports() -> list[list[Report]]:
    options = SweepOptions(tests=(TestName.CE_WRITE, TestName.CE_READ, TestName.LATENCY))
    return [[build_report(SimulatedFabric("h200x2", seed=p * 10 + k, hostname=f"node-{p}"),
                          options=options) for k in range(REPORTS_EACH)]
            for p in range(PROBES)]


def test_overload_is_refused_with_retry_after_and_nothing_is_lost(
        db_url: str, tmp_path: Path) -> None:
    per_probe = _reports()
    answers: list[SendResult] = []
    health: list[int | str] = []
    stop = threading.Event()
    env = {**SATURATED, "PEERWATCH_PROBE_TOKENS": TOKEN}
    with serve_process(db_url, tmp_path / "server", env) as base:
        poller = threading.Thread(target=poll_healthz, args=(base, stop, health))
        poller.start()
        try:
            with ThreadPoolExecutor(max_workers=PROBES) as pool:
                left = list(pool.map(
                    lambda p: run_probe(base, tmp_path / f"spool-{p}", per_probe[p], answers, p),
                    range(PROBES)))
        finally:
            stop.set()
            poller.join()
        ready = httpx.get(f"{base}/readyz", timeout=10).json()
    assert left == [0] * PROBES  # every probe's spool drained
    codes = [a.status for a in answers]
    assert set(codes) <= {201, 200, 429, 503}, [a.describe() for a in answers
                                                 if a.status not in (201, 200, 429, 503)]
    assert codes.count(429) + codes.count(503) > 0  # it was saturated, and said so
    refused = [a for a in answers if a.status in (429, 503)]
    assert all(a.retry_after_s == 1 for a in refused)
    assert health and set(health) == {200}  # liveness answered all along
    assert ready["ingest"]["refused_full"] + ready["ingest"]["refused_wait"] == len(refused)
    engine = make_engine(Settings(database_url=db_url))
    try:
        with engine.connect() as conn:
            stored = conn.execute(select(ReportRow.report_id)).scalars().all()
            measurements = conn.scalar(select(func.count()).select_from(Measurement))
    finally:
        engine.dispose()
    sent = [r for reports in per_probe for r in reports]
    assert sorted(stored) == sorted(r.report_id for r in sent)  # each exactly once
    assert measurements == sum(len(r.results) for r in sent)
