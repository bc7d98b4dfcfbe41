"""Parse, validate and store reports in processes of their own (what `serve` runs).

Measured (py-spy on `serve` under 200 back-to-back posters, judging already in its own
process): the ingest threads spent their CPU in `model_validate_json` (~30-50 ms for a 250 kB
sweep, holding the GIL the whole call: a C call is not interrupted at the switch interval),
orjson and the COPY rows; the event loop then waited behind them for the GIL on every step
of every request, so refusals and `/healthz` took seconds while the process used a fifth of a
core. In worker processes the event loop holds its own GIL: it only receives bodies, decides
refusals from the headers and the gate, and sends a body over a pipe.

`IngestPool` keeps `ingest_concurrency` worker processes (forked from a fork server that
imported this module once, never from the threaded server), each with its own engine and
`worker_nice` steps below the server's CPU priority (`app/priority.py`),
started with the app; until they are all up (seconds), reports are stored in the server's
thread pool as in-process, so a server answers at once after a start. `IngestPool.store` runs
`store_report` (`app/posted_report.py`'s `store_posted`, as in-process) in one and
returns its `IngestResult`; the errors it raises (422, 400,
409 `ReportConflict`, 503 for a locked SQLite) come back pickled and are answered as
in-process. SQLite: one worker (one writer per database).
In-process apps (tests, embedding: `create_app`'s default) keep the thread pool.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import select
import signal
import threading
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from datetime import datetime
from typing import Any

from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session, sessionmaker

from app import heap
from app.config import Settings
from app.db import make_engine, make_sessionmaker
from app.posted_report import store_posted
from app.priority import lower_priority
from app.schemas import IngestResult

log = logging.getLogger(__name__)

_sessions: sessionmaker[Session] | None = None  # the worker process's own
_settings: Settings | None = None


def _start_worker(settings: Settings, server_pid: int) -> None:
    global _sessions, _settings
    # Ctrl-C reaches every process of the terminal's group: the server stops its workers
    # (the pool's shutdown), so a worker must not die mid-report with a KeyboardInterrupt
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    lower_priority(settings.worker_nice)  # before the watch thread: it inherits it
    _die_with(server_pid)
    _settings = settings
    _sessions = make_sessionmaker(make_engine(settings))
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


def store_report(body: bytes, now: datetime, sent_at: datetime | None,
                 canonical: bool = False, encoding: str | None = None) -> IngestResult:
    """In a worker: parse, check and store one report received at `now` (what the route's
    thread does in-process: `posted_report.store_posted`)."""
    assert _sessions is not None and _settings is not None, "not an ingest worker"
    try:
        return store_posted(_sessions, body, _settings, now, sent_at, canonical=canonical,
                            encoding=encoding)
    except OperationalError as exc:  # its message, not the error: it must pickle
        raise RuntimeError(f"storing the report failed: {exc}") from None


class IngestPool:
    """The app's ingest worker processes."""

    def __init__(self, settings: Settings) -> None:
        sqlite = settings.database_url.startswith("sqlite")
        self.settings = settings
        self.workers = 1 if sqlite else settings.ingest_concurrency
        self.restarts = 0
        self._executor = self._new_executor()

        self.ready = False  # until every worker has started: reports go to the thread pool

    def _new_executor(self) -> ProcessPoolExecutor:
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload([__name__])  # imported once, not once per worker
        return ProcessPoolExecutor(self.workers, mp_context=context,
                                   initializer=_start_worker,
                                   initargs=(self.settings, os.getpid()))

    async def warm_up(self) -> None:
        """Start every worker (the fork server imports the app: seconds on a loaded machine);
        until then `ready` is False and reports are stored in the server's thread pool."""
        loop = asyncio.get_running_loop()
        await asyncio.gather(*(loop.run_in_executor(self._executor, _ready)
                               for _ in range(self.workers)))
        self.ready = True

    async def store(self, body: bytes, now: datetime, sent_at: datetime | None,
                    canonical: bool = False, encoding: str | None = None) -> IngestResult:
        """Store one report in a worker; `BrokenProcessPool` when a worker died meanwhile
        (the pool is made anew: the report may or may not be stored, and its retry is
        recognised by its report_id either way)."""
        loop = asyncio.get_running_loop()
        executor = self._executor
        try:
            return await loop.run_in_executor(executor, store_report, body, now, sent_at,
                                              canonical, encoding)
        except BrokenProcessPool:
            if executor is self._executor:
                log.warning("an ingest worker died; starting the pool anew")
                self.restarts += 1
                self._executor = self._new_executor()
                executor.shutdown(wait=False)
            raise

    def close(self) -> None:
        self._executor.shutdown(wait=True, cancel_futures=True)


def pool_for(app: Any) -> IngestPool | None:
    """The app's pool once its workers are up; None for an in-process app, or before (reports
    stored in its thread pool)."""
    pool: IngestPool | None = getattr(app.state, "ingest_pool", None)
    return pool if pool is not None and pool.ready else None


async def ingest_pool_job(app: Any) -> None:
    """One of the app's background jobs: the workers live as long as the server."""
    pool: IngestPool = app.state.ingest_pool
    try:
        await pool.warm_up()
        await asyncio.Event().wait()
    finally:
        await asyncio.to_thread(pool.close)
