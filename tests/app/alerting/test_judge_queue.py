"""The judge queue: judged after the answer, newest report wins, one judgement per host at a
time, clean shutdown — and a report acknowledged but never judged is judged by the periodic
round, because the stored state (not the queue) is the truth."""

from __future__ import annotations

import threading
import time
from collections import Counter
from datetime import UTC, datetime, timedelta

from fastapi.testclient import TestClient
from sqlalchemy import select

from peerwatch.app.ingest.rows import ingest
from peerwatch.app.judging.queue import JudgeQueue, judge_queue_for
from peerwatch.app.judging.service import service_for
from peerwatch.app.main import create_app
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.tables.inventory import Host
from peerwatch.app.store.tables.judged import JudgedHost
from peerwatch.probes.report import TestName
from tests.app.conftest import probe_headers
from tests.app.factory import expected_value, healthy, sweep
from tests.app.judged_client import JudgedClient

LIMIT_S = 60.0


class Judge:
    """A judge that holds each judgement until released, and records what ran at once."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.started = threading.Semaphore(0)
        self.done: Counter[str] = Counter()
        self._lock = threading.Lock()
        self.running: Counter[str] = Counter()
        self.most_at_once: Counter[str] = Counter()

    def __call__(self, host: str) -> object:
        with self._lock:
            self.running[host] += 1
            self.most_at_once[host] = max(self.most_at_once[host], self.running[host])
        self.started.release()
        assert self.release.wait(LIMIT_S)
        with self._lock:
            self.running[host] -= 1
            self.done[host] += 1
        return host


def test_a_host_is_judged_once_for_many_reports_and_again_for_a_late_one() -> None:
    judge = Judge()
    queue = JudgeQueue(judge, workers=3)
    queue.submit("a")
    assert judge.started.acquire(timeout=LIMIT_S)  # "a" is being judged
    for _ in range(5):  # five reports while it is: one more judgement covers them all
        queue.submit("a")
    queue.submit("b")
    assert judge.started.acquire(timeout=LIMIT_S)  # "b" on another worker meanwhile
    assert queue.load().depth == 1 and queue.load().in_flight == 2
    judge.release.set()
    assert queue.drain(LIMIT_S)
    assert judge.done == {"a": 2, "b": 1}
    assert judge.most_at_once["a"] == 1  # never two judgements of one host at once
    load = queue.load()
    assert load.judged == 3 and load.failed == 0 and load.lag_p99_s is not None
    queue.stop(LIMIT_S)


def test_lag_is_measured_from_the_oldest_report_a_judgement_covers() -> None:
    judge = Judge()
    judge.release.set()
    lags: list[float] = []
    queue = JudgeQueue(judge, workers=1, on_lag=lags.append)
    queue.submit("a", arrived=time.time() - 30)  # arrived 30 s ago, waited behind others
    assert queue.drain(LIMIT_S)
    assert len(lags) == 1 and lags[0] >= 30
    queue.stop(LIMIT_S)


def test_a_failing_judgement_is_counted_and_the_workers_go_on() -> None:
    calls: list[str] = []

    def judge(host: str) -> object:
        calls.append(host)
        if host == "bad":
            raise RuntimeError("boom")
        return None if host == "none" else host  # after_ingest answers None on failure

    queue = JudgeQueue(judge, workers=1)
    for host in ("bad", "none", "good"):
        queue.submit(host)
    assert queue.drain(LIMIT_S)
    assert calls == ["bad", "none", "good"]
    assert (queue.load().judged, queue.load().failed) == (1, 2)
    queue.stop(LIMIT_S)


def test_stop_lets_the_running_judgement_finish_and_leaves_the_rest() -> None:
    judge = Judge()
    queue = JudgeQueue(judge, workers=1)
    queue.submit("a")
    queue.submit("b")
    assert judge.started.acquire(timeout=LIMIT_S)
    stopper = threading.Thread(target=queue.stop, args=(LIMIT_S,))
    stopper.start()
    judge.release.set()
    stopper.join(LIMIT_S)
    assert not stopper.is_alive()
    assert judge.done == {"a": 1}  # "b" waits for the periodic round (its state is behind)
    assert queue.load().depth == 1


def test_the_answer_comes_before_the_judgement(settings: Settings) -> None:
    """A report is stored and answered while its host's judgement is held back."""
    with TestClient(create_app(settings)) as client:
        service = service_for(client.app)
        gate, real = threading.Event(), service.after_ingest

        def held(host: str) -> object:
            assert gate.wait(LIMIT_S)
            return real(host)

        service.after_ingest = held  # type: ignore[method-assign]
        r = client.post("/api/v1/reports", content=sweep().model_dump_json(),
                        headers={**probe_headers(), "Content-Type": "application/json"})
        assert r.status_code == 201
        health = client.get("/api/v1/hosts/node-a/health").json()
        assert health["judged_at"] is None and health["verdict"] == "unknown"
        matrix = client.get("/api/v1/hosts/node-a/matrix", params={"test": "ce_write"})
        assert matrix.status_code == 200, matrix.text  # known host, not judged yet: no 404
        assert matrix.json()["cells"] == [] and matrix.json()["judged_at"] is None
        assert client.get("/readyz").json()["judge"]["in_flight"] == 1
        gate.set()
        assert judge_queue_for(client.app).drain(LIMIT_S)
        health = client.get("/api/v1/hosts/node-a/health").json()
        assert health["judged_at"] is not None and health["verdict"] == "healthy"
        matrix = client.get("/api/v1/hosts/node-a/matrix", params={"test": "ce_write"}).json()
        assert len(matrix["cells"]) == 2 and matrix["judged_at"] == health["judged_at"]
        metrics = client.get("/metrics").text
        assert "peerwatch_judge_lag_seconds_count 1.0" in metrics
        assert "peerwatch_judge_queue_depth 0.0" in metrics


def test_a_report_acknowledged_but_never_judged_is_judged_by_the_periodic_round(
        settings: Settings) -> None:
    """The process died between the 201 and the judgement: the next round judges the host,
    though it was judged (before that report) within the round's interval."""
    now = datetime.now(UTC).replace(microsecond=0)
    fresh = settings.model_copy(update={"stale_after_s": 30 * 86_400.0})
    with JudgedClient(create_app(fresh)) as client:
        first = sweep(at=now - timedelta(minutes=20))
        r = client.post("/api/v1/reports", content=first.model_dump_json(),
                        headers={**probe_headers(), "Content-Type": "application/json"})
        assert r.status_code == 201
        app = client.app
        half = expected_value(TestName.CE_WRITE) * 0.5
        slow = sweep(at=now - timedelta(minutes=1),
                     value=lambda s, d, t: half if (s, d) == (0, 1) else healthy(s, d, t))
        with app.state.sessionmaker() as session:  # stored and acknowledged, never queued
            received = datetime.now(UTC)  # after the first judgement
            ingest(session, slow, fresh, received)
        service = service_for(app)
        done = service.evaluate_all(received + timedelta(seconds=1), only_due=True)
        assert [o.host for o in done] == ["node-a"]
        with app.state.sessionmaker() as session:
            judged = session.scalar(select(JudgedHost.judged_at))
            last = session.scalar(select(Host.last_received_at))
            assert judged is not None and last is not None and judged >= last
        pair = next(p for p in client.get("/api/v1/hosts/node-a/health").json()["pairs"]
                    if (p["src"], p["dst"]) == (0, 1))
        assert pair["tests"][0]["ratio_expected"] == 0.5
        again = service.evaluate_all(received + timedelta(seconds=2), only_due=True)
        assert again == []  # judged after its newest report: not due again


def test_a_long_round_judges_each_host_at_its_own_time(settings: Settings,
                                                       monkeypatch) -> None:
    """A round over a large fleet takes minutes: a host judged late in it is stamped with the
    time it was judged, not the round's start, so a report that arrived meanwhile is covered
    (else every scan would find that host judged before its newest report, and judge again)."""
    now = datetime.now(UTC).replace(microsecond=0)
    fresh = settings.model_copy(update={"stale_after_s": 30 * 86_400.0})
    app = create_app(fresh)
    with TestClient(app):
        with app.state.sessionmaker() as session:
            ingest(session, sweep("node-a", at=now - timedelta(minutes=1)), fresh, now)
            # node-b's report arrives while the round judges node-a (a minute, say)
            ingest(session, sweep("node-b", at=now), fresh, now + timedelta(seconds=50))
        readings = iter(range(0, 10_000, 100))  # the wall clock, 100 s on at each reading
        monkeypatch.setattr("peerwatch.app.judging.service.wall_clock",
                            lambda: now + timedelta(seconds=next(readings)))
        service = service_for(app)
        judged = [o.host for o in service.evaluate_all()]  # the real round: no `now` given
        assert judged == ["node-a", "node-b"]
        with app.state.sessionmaker() as session:
            rows = {name: at for name, at in session.execute(
                select(Host.name, JudgedHost.judged_at)
                .join(JudgedHost, JudgedHost.host_id == Host.id))}
        assert rows["node-b"] - rows["node-a"] >= timedelta(seconds=100)
        # node-b's judgement covers the report that arrived during the round
        assert rows["node-b"].replace(tzinfo=UTC) >= now + timedelta(seconds=50)
