"""Parse, validate and store reports in processes of their own (what `serve` runs).

Ingest threads in the server spend their CPU in `model_validate_json` (holding the GIL
for a whole sweep: a C call is not interrupted at the switch interval), orjson and the COPY
rows; the event loop then waits behind them for the GIL on every step of every request, so
refusals and `/healthz` are slow while the process uses a fraction of a core. In worker
processes the event loop holds its own GIL: it only receives bodies, decides refusals from
the headers and the gate, and sends a body over a pipe.

`IngestPool` keeps `ingest_concurrency` worker processes (forked from a fork server that
imported this module once, never from the threaded server), each with its own engine,
`receive_nice` steps below the server's CPU priority while it checks and stores a report
whole (the POST waits for that) and `worker_nice` steps below in its expansion thread
(`app/runtime/priority.py`: the answer's work gets a core before the rows', the judge's and the
other workers' expansions), started with the app; until they are all up (seconds), reports
are stored in the server's thread pool as in-process, so a server answers at once after a
start. `IngestPool.receive` runs `receive_report` in one: the report is checked as
in-process (`app/ingest/posted.py`) and stored whole (`app/ingest/received.py`), and the
POST is answered; the route then has `IngestPool.expand` expand it into its rows in the
same worker, and only after that wakes the judge. The errors a worker raises (422, 400,
409 `ReportConflict`, 503 for a locked SQLite) come back pickled and are answered as
in-process. SQLite: one worker (one writer per database).
In-process apps (tests, embedding: `create_app`'s default) keep the thread pool.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import multiprocessing
import os
import select
import signal
import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from peerwatch.app.api.errors import DatabaseUnavailable, database_unavailable
from peerwatch.app.ingest.posted import Pending, expand_pending, expand_stored, receive_posted
from peerwatch.app.judging.sessions import make_sessionmaker
from peerwatch.app.runtime import heap
from peerwatch.app.runtime.config import Settings
from peerwatch.app.runtime.credentials import Identity
from peerwatch.app.runtime.priority import lower_priority
from peerwatch.app.schemas.ingest import IngestResult
from peerwatch.app.store.db import make_engine

log = logging.getLogger(__name__)
T = TypeVar("T")

_sessions: sessionmaker[Session] | None = None  # the worker process's own
_settings: Settings | None = None
_expander: ThreadPoolExecutor | None = None  # the worker's expansion thread


def receive_and_expand_nice(settings: Settings) -> tuple[int, int]:
    """(steps below the server a worker checks and stores a report whole at, steps its
    expansion runs at): the POST waits for the first, nothing waits for the second."""
    return settings.receive_nice, max(settings.receive_nice, settings.worker_nice)


def _start_worker(settings: Settings, server_pid: int) -> None:
    global _sessions, _settings, _expander
    # Ctrl-C reaches every process of the terminal's group: the server stops its workers
    # (the pool's shutdown), so a worker must not die mid-report with a KeyboardInterrupt
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    receive, expand = receive_and_expand_nice(settings)
    lower_priority(receive)  # before the watch thread: it inherits it
    _die_with(server_pid)
    _settings = settings
    _sessions = make_sessionmaker(make_engine(settings))
    # expansions run in a thread of their own, `expand - receive` steps nicer still (Linux
    # keeps niceness per thread, and a thread cannot take it back): started now, so every
    # thread of a started worker already runs at its niceness
    _expander = ThreadPoolExecutor(1, thread_name_prefix="ingest-expand",
                                   initializer=lower_priority, initargs=(expand - receive,))
    _expander.submit(_ready).result()
    heap.settle()  # as the server does: full collections then skip the imported modules


def _die_with(server_pid: int) -> None:
    """End this worker when the server ends, however it ends (SIGKILL, the OOM killer).

    A pool worker never notices on its own: it holds both ends of its call queue's pipe,
    so a dead server's queue never reads EOF, and the worker's parent is the fork server,
    which lives as long as any worker does. Left alone, both outlive a killed server for
    good, holding its database connections and its stdout (a supervisor or test reading
    that pipe then waits forever). A pidfd (Linux) turns readable when the server exits,
    reaped or not; elsewhere the server's pid is polled."""
    try:
        pidfd = os.pidfd_open(server_pid)
    except (AttributeError, OSError):
        pidfd = None
    if pidfd is None and not _alive(server_pid):
        os._exit(1)

    def watch() -> None:
        if pidfd is not None:
            select.select([pidfd], [], [])
        else:
            while _alive(server_pid):
                threading.Event().wait(1.0)
        os._exit(1)  # nothing to finish: the server that would take the answer is gone

    threading.Thread(target=watch, name="ingest-worker-watch", daemon=True).start()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _ready() -> bool:
    return _sessions is not None


PENDING_MAX = 64  # reports received and kept for their expansion, per worker (a bound)
_pending: OrderedDict[int, Pending] = OrderedDict()  # received id -> the checked report


def _picklable(call: Callable[..., T]) -> Callable[..., T]:
    """A database that cannot be reached as `DatabaseUnavailable` (503 with Retry-After, as
    in-process): the driver's error need not pickle, and wrapped in a RuntimeError (as it
    was) it was a 500 for every report in flight while PostgreSQL restarted."""
    @functools.wraps(call)
    def wrapped(*args: Any) -> T:
        try:
            return call(*args)
        except SQLAlchemyError as exc:
            if not database_unavailable(exc):
                raise
            orig = getattr(exc, "orig", None) or exc
            raise DatabaseUnavailable(type(orig).__name__) from None
    return wrapped


@_picklable
def receive_report(body: bytes, now: datetime, sent_at: datetime | None,
                   canonical: bool = False, encoding: str | None = None,
                   speaker: Identity | None = None) -> tuple[IngestResult, int | None]:
    """In a worker: check one report received at `now` and store it whole
    (`posted_report.receive_posted`): the POST's answer, and the received row's id when it
    is to be expanded (kept here, so its expansion need not parse it again)."""
    assert _sessions is not None and _settings is not None, "not an ingest worker"
    result, pending = receive_posted(_sessions, body, _settings, now, sent_at, canonical,
                                     encoding, speaker)
    if pending is None:
        return result, None
    _pending[pending.receipt.received_id] = pending
    while len(_pending) > PENDING_MAX:  # never expanded here: the recovery job will
        _pending.popitem(last=False)
    return result, pending.receipt.received_id


@_picklable
def expand_report(received_id: int) -> str | None:
    """In a worker: expand a received report into its rows; its host (to judge), or None
    when another expansion stored it. A report this worker did not receive (it was started
    anew since) is read back from its stored body."""
    assert _expander is not None, "not an ingest worker"
    pending = _pending.pop(received_id, None)
    return _expander.submit(_expand, received_id, pending).result()


def _expand(received_id: int, pending: Pending | None) -> str | None:
    """In the worker's expansion thread (`receive_and_expand_nice`): the worker's one call
    waits for it, so only one thread of the worker runs at a time."""
    assert _sessions is not None and _settings is not None, "not an ingest worker"
    if pending is None:
        return expand_stored(_sessions, _settings, received_id)
    done = expand_pending(_sessions, _settings, pending)
    return None if done is None else done.host


Ticket = tuple[int, int]  # (worker, received id): a report received and not yet expanded


class IngestPool:
    """The app's ingest worker processes, each a pool of one: a report is expanded by the
    worker that received it (it holds the checked report), and a host's reports go to the
    worker that took its last one when that one is idle (its inventory memo is warm there:
    an unchanged inventory then writes nothing, where workers taking calls in turn would
    each work it out again)."""

    def __init__(self, settings: Settings) -> None:
        sqlite = settings.database_url.startswith("sqlite")
        self.settings = settings
        self.workers = 1 if sqlite else settings.ingest_concurrency
        self.restarts = 0
        self._executors = [self._new_executor() for _ in range(self.workers)]
        self._calls = [0] * self.workers  # sent to each worker and not answered yet
        self._last_worker: dict[str, int] = {}  # host -> the worker of its last report
        self.ready = False  # until every worker has started: reports go to the thread pool

    def _new_executor(self) -> ProcessPoolExecutor:
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload([__name__])  # imported once, not once per worker
        return ProcessPoolExecutor(1, mp_context=context, initializer=_start_worker,
                                   initargs=(self.settings, os.getpid()))

    async def warm_up(self) -> None:
        """Start every worker (the fork server imports the app: seconds on a loaded machine);
        until then `ready` is False and reports are stored in the server's thread pool."""
        loop = asyncio.get_running_loop()
        await asyncio.gather(*(loop.run_in_executor(e, _ready) for e in self._executors))
        self.ready = True

    def _choose(self, host: str | None) -> int:
        last = self._last_worker.get(host) if host else None
        if last is not None and self._calls[last] == 0:
            return last
        return min(range(self.workers), key=self._calls.__getitem__)

    async def _call(self, index: int, call: Callable[..., T], *args: Any) -> T:
        """`call(*args)` in worker `index`; `BrokenProcessPool` when it died meanwhile (it is
        started anew: the report may or may not be stored, and its retry is recognised by
        its report_id either way)."""
        loop = asyncio.get_running_loop()
        executor = self._executors[index]
        self._calls[index] += 1
        try:
            return await loop.run_in_executor(executor, call, *args)
        except BrokenProcessPool:
            if executor is self._executors[index]:
                log.warning("ingest worker %d died; starting it anew", index)
                self.restarts += 1
                self._executors[index] = self._new_executor()
                executor.shutdown(wait=False)
            raise
        finally:
            self._calls[index] -= 1

    async def receive(self, host: str | None, body: bytes, now: datetime,
                      sent_at: datetime | None, canonical: bool = False,
                      encoding: str | None = None, speaker: Identity | None = None
                      ) -> tuple[IngestResult, Ticket | None]:
        """Check and store one report whole in a worker: the POST's answer, and the ticket
        its expansion takes (None: a duplicate, nothing to expand)."""
        index = self._choose(host)
        result, received_id = await self._call(index, receive_report, body, now, sent_at,
                                               canonical, encoding, speaker)
        if host:
            if len(self._last_worker) > 100_000:  # made-up host names: a bound
                self._last_worker.clear()
            self._last_worker[host] = index
        return result, None if received_id is None else (index, received_id)

    async def expand(self, ticket: Ticket) -> str | None:
        """Expand a received report in the worker that received it: its host, to judge."""
        index, received_id = ticket
        return await self._call(index, expand_report, received_id)

    async def expand_stored(self, received_id: int) -> str | None:
        """Expand a report left received (the recovery job) in the least busy worker."""
        return await self._call(self._choose(None), expand_report, received_id)

    def close(self) -> None:
        for executor in self._executors:
            executor.shutdown(wait=True, cancel_futures=True)


def pool_for(app: Any) -> IngestPool | None:
    """The app's pool once its workers are up; None for an in-process app, or before (reports
    stored in its thread pool)."""
    pool: IngestPool | None = getattr(app.state, "ingest_pool", None)
    return pool if pool is not None and pool.ready else None
