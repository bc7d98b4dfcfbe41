"""Judge off the request path: a per-host coalescing queue, drained by worker threads.

Ingest stores a report, hands its host to `JudgeQueue.submit` and answers at once; the
judgement (`AlertingService.after_ingest`: judge, store the verdicts, evaluate the rules)
runs here, after. The queue holds each host at most once — a judgement reads the host's
stored state, so it covers every report committed before it starts: newest report wins,
however many arrived meanwhile — and never runs two judgements of one host at once in this
process (the per-host lock in `engine.py` does so across replicas). A host submitted while
it is being judged is judged once more afterwards, for the report that came in late.

The queue is a speed-up, never the truth: the stored state is. A process that dies with hosts
in the queue loses nothing, because the periodic round (`AlertingService.evaluate_all`)
judges every host whose newest report is newer than its judgement.

Judge lag is measured per judgement from the oldest report it covers (its arrival at the
server) to the stored verdict: an upper bound for every report it covers.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import zlib
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

log = logging.getLogger(__name__)

LAG_WINDOW = 2048  # the recent judgements p50/p99 are taken over


@dataclass(frozen=True)
class QueueLoad:
    """What the queue is doing now, and how far behind the reports its verdicts are."""

    depth: int  # hosts waiting for a judgement
    in_flight: int  # hosts being judged now
    workers: int
    judged: int  # judgements done since start
    failed: int
    lag_p50_s: float | None  # over the last LAG_WINDOW judgements
    lag_p99_s: float | None
    lag_max_s: float | None
    restarts: int = 0  # of the judge process (`serve`): it died and was started anew


def shard_of(host: str, shards: int) -> int:
    """Which of `shards` judge processes judges `host` (`app/judging/shards.py`):
    stable across processes and runs."""
    return zlib.crc32(host.encode()) % shards if shards > 1 else 0


def quantile(sorted_values: list[float], q: float) -> float | None:
    """The nearest-rank quantile of an ascending list (None when empty)."""
    if not sorted_values:
        return None
    rank = max(0, min(len(sorted_values) - 1, round(q * len(sorted_values) + 0.5) - 1))
    return sorted_values[rank]


class JudgeQueue:
    """Hosts waiting for a judgement, and the threads that judge them."""

    def __init__(self, judge: Callable[[str], object], workers: int,
                 on_lag: Callable[[float], None] | None = None) -> None:
        self._judge = judge
        self.workers = max(1, workers)
        self._on_lag = on_lag
        self._cond = threading.Condition()
        self._pending: dict[str, float] = {}  # host -> oldest unjudged arrival (epoch s)
        self._in_flight: set[str] = set()
        self._threads: list[threading.Thread] = []
        self._stopping = False
        self._lags: deque[float] = deque(maxlen=LAG_WINDOW)
        self.judged = 0
        self.failed = 0

    # ----------------------------------------------------------------- producers

    def submit(self, host: str, arrived: float | None = None) -> None:
        """`host` has a newer stored report (that arrived at `arrived`, epoch seconds)."""
        arrived = time.time() if arrived is None else arrived
        with self._cond:
            if host not in self._pending:  # keeps the oldest arrival: lag is an upper bound
                self._pending[host] = arrived
            self._cond.notify()
        self.start()

    # ----------------------------------------------------------------- lifetime

    def start(self) -> None:
        """Start the worker threads, once (submit does it too, for apps never started)."""
        with self._cond:
            if self._threads or self._stopping:
                return
            self._threads = [threading.Thread(target=self._work, daemon=True,
                                              name=f"peerwatch-judge-{i}")
                             for i in range(self.workers)]
        for thread in self._threads:
            thread.start()

    def stop(self, timeout_s: float = 30.0) -> None:
        """Let running judgements finish and the workers exit; what still waits is left to
        the periodic round (the stored state says those hosts are behind)."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
            threads = list(self._threads)
        deadline = time.monotonic() + timeout_s
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        if any(t.is_alive() for t in threads):
            log.warning("a judgement was still running at shutdown; it is left to finish")

    def drain(self, timeout_s: float = 60.0) -> bool:
        """Wait until nothing waits or runs (tests, benches); False when time ran out."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while self._pending or self._in_flight:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
        return True

    # ----------------------------------------------------------------- the state

    def load(self) -> QueueLoad:
        with self._cond:
            lags = sorted(self._lags)
            return QueueLoad(depth=len(self._pending), in_flight=len(self._in_flight),
                             workers=self.workers, judged=self.judged, failed=self.failed,
                             lag_p50_s=quantile(lags, 0.5), lag_p99_s=quantile(lags, 0.99),
                             lag_max_s=lags[-1] if lags else None)

    # ----------------------------------------------------------------- workers

    def _take(self) -> tuple[str, float] | None:
        """The longest-waiting host not being judged now; None when stopping."""
        with self._cond:
            while not self._stopping:
                host = next((h for h in self._pending if h not in self._in_flight), None)
                if host is not None:
                    self._in_flight.add(host)
                    return host, self._pending.pop(host)
                self._cond.wait()
            return None

    def _work(self) -> None:
        while (task := self._take()) is not None:
            host, arrived = task
            ok = True
            try:
                ok = self._judge(host) is not None
            except Exception:  # after_ingest never raises; a judge that does must not kill us
                log.exception("judging host %s failed", host)
                ok = False
            lag = max(0.0, time.time() - arrived)
            with self._cond:
                self._in_flight.discard(host)
                if ok:
                    self.judged += 1
                    self._lags.append(lag)
                else:  # left to the periodic round: its stored judgement is behind
                    self.failed += 1
                self._cond.notify_all()
            if ok and self._on_lag is not None:
                self._on_lag(lag)


class Judges(Protocol):
    """What ingest and the health routes see of judging, in-process (`JudgeQueue`) or in the
    judge process `serve` starts (`app/judging/process.py`)."""

    def submit(self, host: str, arrived: float | None = None) -> None: ...

    def load(self) -> QueueLoad: ...


def judges_for(app: object) -> Judges:
    """The app's judges, wherever they run (made by `app.main.create_app`)."""
    judges: Judges = app.state.judge_queue  # type: ignore[attr-defined]
    return judges


def judge_queue_for(app: object) -> JudgeQueue:
    """The app's in-process queue (tests, embedding: `create_app`'s default)."""
    queue = app.state.judge_queue  # type: ignore[attr-defined]
    if not isinstance(queue, JudgeQueue):
        raise TypeError("this app judges in its judge process, not in-process")
    return queue


async def judge_queue_job(app: object) -> None:
    """One of the app's background jobs: the workers run while the app serves; cancelled at
    shutdown, it lets running judgements finish (in a thread, off the event loop)."""
    queue = judge_queue_for(app)
    queue.start()
    try:
        await asyncio.Event().wait()  # until cancelled
    finally:
        await asyncio.to_thread(queue.stop)
