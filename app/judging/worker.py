"""The judge process (`peerwatch judge`): judging, out of the server's request process.

`serve` starts one as its child (`app/judging/process.py`); it can also run alone.
It judges with the same per-host coalescing queue as the in-process mode
(`app/judging/queue.py`), fed from three sources:

- wakes: the server sends "<arrival> <host>" over a local SOCK_SEQPACKET socket after each
  stored report (`--wake-fd`), so a report is judged within milliseconds of its commit;
- the scan: every `judge_scan_s` it asks the database for hosts whose newest report is newer
  than their judgement (a wake lost to a full socket, a restart, the other replica's judge
  behind) — the stored state, not the wakes, is the truth;
- the periodic round (`AlertingService.tick`: fleet peers, silent hosts, delivery, pruning)
  every `alert_eval_interval_s`, in whichever judge process holds `JUDGE_ROUND_LOCK`.

At most one judgement per host runs at a time across replicas (the advisory lock of
`app/judging/transaction.py`), and none twice for the same reports: a host is judged
"unless judged since it was submitted here" (`due_before`). A judgement that started after
the submit read every report committed before it, so skipping it loses nothing; two replicas'
judges thus share the fleet's work. SQLite: one worker thread (one writer per database).

Its figures (queue depth, in flight, judged, failed, recent lag, each lag observed) go back
over the same socket every FIGURES_S, to the server's `/metrics` and `/readyz`: no table row
written twice a second, no file to clean up, and figures that stop when the process does.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import asdict
from datetime import UTC, datetime, timedelta

from sqlalchemy import Engine, select

from peerwatch.app.alerting.settings import AlertingSettings
from peerwatch.app.judging.queue import JudgeQueue, shard_of
from peerwatch.app.judging.service import AlertingService
from peerwatch.app.judging.sessions import make_sessionmaker
from peerwatch.app.judging.transaction import judged_after_newest_report
from peerwatch.app.runtime import heap
from peerwatch.app.runtime.config import Settings
from peerwatch.app.runtime.leadership import JUDGE_ROUND_LOCK, Leadership
from peerwatch.app.store.db import make_engine
from peerwatch.app.store.tables.inventory import Host
from peerwatch.app.store.tables.judged import JudgedHost

log = logging.getLogger("peerwatch.judge")

FIGURES_S = 0.5
STOP_S = 25.0  # to finish at shutdown: the server kills its judge after its own 30 s
MAX_LAGS_PER_MESSAGE = 2000  # ~20 kB: well under a local socket's message limit


def wake_message(host: str, arrived: float) -> bytes:
    """What the server sends after storing a report of `host` that arrived at `arrived`."""
    return f"{arrived:.6f} {host}".encode()


def parse_wake(message: bytes) -> tuple[str, float] | None:
    """(host, arrival) from a wake; None for anything else (never trusted to be well-formed)."""
    try:
        arrived, host = message.decode().split(" ", 1)
        return host, float(arrived)
    except ValueError:
        return None


def behind_hosts(engine: Engine, arrived_before: datetime) -> list[tuple[str, float]]:
    """Hosts whose newest report (arrived before `arrived_before`) is newer than their
    judgement, with that report's arrival: what a judge must pick up without a wake."""
    sessions = make_sessionmaker(engine)
    query = (select(Host.name, Host.last_received_at)
             .outerjoin(JudgedHost, JudgedHost.host_id == Host.id)
             .where(Host.last_received_at.is_not(None), Host.last_received_at < arrived_before)
             .where(~judged_after_newest_report() | JudgedHost.judged_at.is_(None)))
    with sessions() as session:
        return [(name, _epoch(at)) for name, at in session.execute(query) if at is not None]


def _epoch(at: datetime) -> float:
    return (at if at.tzinfo else at.replace(tzinfo=UTC)).timestamp()


class JudgeWorker:
    """The judge process's parts: the queue, its sources, and the figures it sends back."""

    def __init__(self, settings: Settings, wake: socket.socket | None = None,
                 alerting: AlertingSettings | None = None, shard: tuple[int, int] = (0, 1),
                 listening_since: datetime | None = None) -> None:
        self.settings = settings
        self.shard = shard  # (index, count): the scan picks up this share of the hosts
        self.engine = make_engine(settings)
        self.service = AlertingService(make_sessionmaker(self.engine), settings,
                                       alerting or AlertingSettings(),
                                       listening_since=listening_since)
        self.wake = wake
        self.stopping = threading.Event()
        self._submitted: dict[str, float] = {}  # host -> newest submit here (epoch s)
        self._lags: list[float] = []
        self._lock = threading.Lock()
        workers = 1 if self.engine.dialect.name == "sqlite" else settings.judge_workers
        self.queue = JudgeQueue(self._judge, workers, on_lag=self._lagged)

    # ----------------------------------------------------------------- the work

    def submit(self, host: str, arrived: float) -> None:
        with self._lock:
            self._submitted[host] = time.time()
        self.queue.submit(host, arrived)

    def _judge(self, host: str) -> object:
        """Judge `host` unless some judge (here or in another replica) did since its newest
        submit here: that judgement read every report committed before the submit."""
        with self._lock:
            submitted = self._submitted.get(host)
        since = datetime.fromtimestamp(submitted, UTC) if submitted is not None else None
        return self.service.after_ingest(host, due_before=since)

    def _lagged(self, lag: float) -> None:
        with self._lock:
            if len(self._lags) < 100_000:  # a server that stopped reading: bounded memory
                self._lags.append(lag)

    # ----------------------------------------------------------------- sources

    def _read_wakes(self) -> None:
        assert self.wake is not None
        while not self.stopping.is_set():
            try:
                message = self.wake.recv(4096)
            except TimeoutError:
                continue
            except OSError:
                message = b""
            if not message:  # the server is gone: so is its judge
                log.info("the server closed the judge socket; stopping")
                self.stopping.set()
                return
            wake = parse_wake(message)
            if wake is not None:
                self.submit(*wake)

    def _scan_once(self) -> int:
        cutoff = datetime.now(UTC) - timedelta(seconds=self.settings.judge_scan_s)
        index, count = self.shard
        found = [(host, arrived) for host, arrived in behind_hosts(self.engine, cutoff)
                 if shard_of(host, count) == index]
        for host, arrived in found:
            self.submit(host, arrived)
        return len(found)

    def _every(self, interval_s: float, work: str) -> None:
        """Run `self.<work>()` every `interval_s` until stopping; failures are logged only."""
        while not self.stopping.wait(interval_s):
            try:
                getattr(self, work)()
            except Exception:  # noqa: BLE001 - the judge process must keep judging
                log.exception("judge process: %s failed; retrying", work)

    def _round_once(self) -> None:
        """The periodic round, in the one judge process holding the round lock."""
        if self._round_lead.held():
            self.service.tick(stopping=self.stopping)

    def _send_figures_once(self) -> None:
        if self.wake is None:
            return
        with self._lock:
            lags, self._lags = self._lags[:MAX_LAGS_PER_MESSAGE], self._lags[MAX_LAGS_PER_MESSAGE:]
        message = json.dumps({"load": asdict(self.queue.load()), "lags": lags}).encode()
        try:
            self.wake.send(message)
        except OSError:  # the server is busy or gone: these lags are dropped, the load resent
            pass

    # ----------------------------------------------------------------- lifetime

    def run(self) -> int:
        """Judge until SIGTERM/SIGINT or until the server closes the socket."""
        self._round_lead = Leadership(self.engine, JUDGE_ROUND_LOCK)
        sources = [self._thread("scan", self._every, self.settings.judge_scan_s, "_scan_once"),
                   self._thread("figures", self._every, FIGURES_S, "_send_figures_once")]
        interval = self.service.alerting.alert_eval_interval_s
        if interval > 0:
            sources.append(self._thread("round", self._every, interval, "_round_once"))
        if self.wake is not None:
            self.wake.settimeout(1.0)
            sources.append(self._thread("wakes", self._read_wakes))
        heap.settle()  # before judging: full collections then skip start-up's objects
        self.queue.start()
        for thread in sources:
            thread.start()
        self._scan_once()  # what was left behind by a judge that died, at once
        self.stopping.wait()
        self._stop(sources)
        return 0

    @staticmethod
    def _thread(name: str, target: Callable[..., None], *args: object) -> threading.Thread:
        return threading.Thread(target=target, args=args, name=f"peerwatch-judge-{name}",
                                daemon=True)

    def _stop(self, sources: list[threading.Thread]) -> None:
        """Stop in order, within STOP_S: the sources (a scan or round under way finishes),
        the queue's judgements, delivery, the engine. No thread of the judge may still run
        at interpreter exit: each connection checkout is a `weakref.finalize`, and one made
        or ended while CPython 3.11's exit hook iterates the finalizers fails it
        ("dictionary changed size during iteration"). Daemon threads all the same: one
        stuck past STOP_S must not keep the process from ending (the server kills it)."""
        deadline = time.monotonic() + STOP_S
        for thread in sources:
            thread.join(max(0.0, deadline - time.monotonic()))
        self.queue.stop(max(0.0, deadline - time.monotonic()))
        self._round_lead.release()
        self.service.close(max(0.0, deadline - time.monotonic()))
        self.engine.dispose()
        if any(t.is_alive() for t in sources):
            log.warning("judge process: a scan or round still ran after %g s; left to end",
                        STOP_S)


def run_judge_process(settings: Settings, wake_fd: int | None,
                      shard: tuple[int, int] = (0, 1),
                      listening_since: datetime | None = None) -> int:
    """`peerwatch judge`'s body: stop cleanly on SIGTERM/SIGINT."""
    wake = socket.socket(fileno=wake_fd) if wake_fd is not None else None
    worker = JudgeWorker(settings, wake, shard=shard, listening_since=listening_since)

    def stop(_signum: int, _frame: object) -> None:
        worker.stopping.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    log.info("judge process %d: %d worker(s), shard %d of %d, scan every %g s", os.getpid(),
             worker.queue.workers, shard[0] + 1, shard[1], settings.judge_scan_s)
    return worker.run()
