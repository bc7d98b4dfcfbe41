"""PostgreSQL restarted under load: every answer a report gets is 2xx, or 429/503 with
`Retry-After` (never a 500), and every report is stored exactly once after its retries; a
reader of the host list beside gets 200 or 503 with `Retry-After`.

An ingest worker wrapped the database's error in a RuntimeError, which no handler mapped:
40 of ~900 answers were a plain 500 while the database restarted (nothing was lost: the
probe retried those too). Now it sends back `DatabaseUnavailable`, answered 503 as the
in-process path answers an `OperationalError`.

The PostgreSQL restarted is a private cluster of this test's own (initdb into a temporary
folder, on a free port: bench/helpers/drill.py), never the machine's shared one. Where
initdb and pg_ctl are missing, `require` skips (developer) or fails
(PEERWATCH_REQUIRE_SERVICES=1).
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from bench.helpers.drill import PrivateCluster, Reports, private_cluster_possible, stored
from peerwatch.probes.agent.sender import Outcome, Sender
from peerwatch.probes.report import Report
from tests.app.conftest import PROBE_TOKEN
from tests.app.serve_process import serving
from tests.conftest import eventually, require

POSTERS = 4
MOST_TRIES = 30  # a report not stored after this many answers is given up (and counted lost)
Answer = tuple[int | None, bool]  # (status or None for no answer, came with Retry-After)


class Load:
    """POSTERS probes posting fresh reports back to back with the agent's `Sender`, each
    sent again until stored, after the answer's Retry-After, as the agent does."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.reports = Reports()
        self.answers: Counter[Answer] = Counter()
        self.sent: list[str] = []
        self.stored = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.reads: Counter[Answer] = Counter()  # of a reader of the host list beside
        self._threads = [threading.Thread(target=self._post, daemon=True)
                         for _ in range(POSTERS)]
        self._threads.append(threading.Thread(target=self._read, daemon=True))

    def start(self) -> Load:
        for thread in self._threads:
            thread.start()
        return self

    def finish(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join()

    def _post(self) -> None:
        sender = Sender(self.base, PROBE_TOKEN, 60.0)  # the agent's own, its one quick retry
        while not self._stop.is_set():
            report = self.reports.new()
            with self._lock:
                self.sent.append(str(report.report_id))
            self._deliver(sender, report)

    def _read(self) -> None:
        with httpx.Client(base_url=self.base, timeout=60) as client:
            while not self._stop.is_set():
                try:
                    r = client.get("/api/v1/hosts")
                    answer = (r.status_code, "retry-after" in r.headers)
                except httpx.TransportError:
                    answer = (None, False)
                with self._lock:
                    self.reads[answer] += 1
                time.sleep(0.1)

    def _deliver(self, sender: Sender, report: Report) -> None:
        for _ in range(MOST_TRIES):
            answer = sender.send(report)
            self._note((answer.status, answer.retry_after_s is not None))
            if answer.outcome is Outcome.DELIVERED:
                with self._lock:
                    self.stored += 1
                return
            if answer.status not in (429, 503) or answer.retry_after_s is None:
                return  # an answer a probe would not wait for: the test fails on it
            time.sleep(answer.retry_after_s)

    def _note(self, answer: Answer) -> None:
        with self._lock:
            self.answers[answer] += 1


def acceptable(answer: Answer) -> bool:
    status, retry_after = answer
    return status is not None and (200 <= status < 300 or (status in (429, 503)
                                                           and retry_after))


@pytest.fixture
def cluster() -> Iterator[PrivateCluster]:
    require(private_cluster_possible(),
            "PostgreSQL's initdb and pg_ctl (a private cluster to restart)")
    made = PrivateCluster()
    try:
        yield made.start()
    finally:
        made.remove()


def test_postgres_restarted_under_load_is_503_never_500(tmp_path: Path,
                                                          cluster: PrivateCluster) -> None:
    with serving(tmp_path, cluster.url) as served:
        load = Load(served.base).start()
        try:
            assert eventually(lambda: load.stored >= 20), "nothing stored before the restart"
            cluster.restart(down_s=2.0)  # pg_ctl stop -m fast: every connection cut
            before = load.stored
            assert eventually(lambda: load.stored >= before + 20), "nothing stored after it"
        finally:
            load.finish()
        log = served.log_text()
    wrong = {answer: n for answer, n in load.answers.items() if not acceptable(answer)}
    assert not wrong, f"answers other than 2xx or 429/503 with Retry-After: {wrong}"
    wrong = {answer: n for answer, n in load.reads.items() if not acceptable(answer)}
    assert not wrong, f"reads answered other than 200 or 503 with Retry-After: {wrong}"
    assert load.answers[(503, True)], f"the restart was never felt: {dict(load.answers)}"
    held = stored(cluster.url)
    assert held.rows == held.distinct == len(load.sent) == load.stored, (
        held, len(load.sent), load.stored, dict(load.answers))
    for line in ("Exception in ASGI application", "database error during"):  # a 500's
        assert line not in log, log[-3000:]
