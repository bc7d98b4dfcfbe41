"""After the answer: reports stored whole are expanded into rows, then judged (`serve`).

The ingest route answers a report once an ingest worker has checked it and stored it whole
(`app/ingest/received.py`) and lets go of its ingest slot; `Expansions.start` then has
the same worker expand it (`IngestPool.expand`), at most `concurrency` expansions at once
(half the workers: the others stay free to answer), and wakes the judge for its host once
its rows are committed, so a judgement never reads a host without the report it was woken
for. The gate's door counts the reports waiting here (`GateStats.expanding`) and refuses
past its `expand_backlog`, so a burst of fast answers cannot pile up expansions.

With the slot held until the expansion was done, sweeps waited for a slot behind other
reports' expansions even at a real cadence, though the answer's own work (check and INSERT)
is small.

`recovery_job` expands what was left received: a worker that died, a server stopped between
an answer and its expansion, an expansion that failed. Every RECOVER_EVERY_S it takes the
rows received more than RECOVER_AFTER_S ago (any replica's: the expansion's claim on the row
makes sure one of them stores it, once), each in an expansion's turn. `ingest_pool_job`,
the pool's lifetime as a background job, is here because at shutdown it drains them.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime, timedelta
from typing import Any

from starlette.concurrency import run_in_threadpool

from peerwatch.app.api.errors import database_unavailable
from peerwatch.app.ingest.gate import gate_for
from peerwatch.app.ingest.pool import IngestPool, Ticket
from peerwatch.app.ingest.received import unexpanded
from peerwatch.app.judging.queue import judges_for
from peerwatch.probes.report import utcnow

log = logging.getLogger(__name__)

RECOVER_EVERY_S = 10.0
RECOVER_AFTER_S = 30.0  # far past a normal expansion (milliseconds to a second or two)
DRAIN_S = 30.0  # at shutdown: the expansions under way may finish, the rest are recovered


class Expansions:
    """The expansions under way in this app (the tasks, so they are neither collected nor
    left behind at shutdown)."""

    def __init__(self, app: Any, concurrency: int) -> None:
        self.app = app
        self.concurrency = concurrency
        self._turns = asyncio.Semaphore(concurrency)
        self._tasks: set[asyncio.Task[None]] = set()

    def start(self, pool: IngestPool, ticket: Ticket, arrived: datetime) -> None:
        """Expand the received report `ticket` in the background, in its turn (a failure
        leaves it stored whole: the recovery job tries it again)."""
        gate_for(self.app).stats.expanding += 1
        task = asyncio.create_task(self._expand(pool, ticket, arrived))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _expand(self, pool: IngestPool, ticket: Ticket, arrived: datetime) -> None:
        stats = gate_for(self.app).stats
        try:
            async with self.turn():
                host = await pool.expand(ticket)
        except Exception as exc:  # noqa: BLE001 - it stays stored whole; the recovery job retries
            stats.expand_failed += 1
            failed(exc, "expanding a received report failed; the recovery job retries it")
            return
        finally:
            stats.expanding -= 1
        if host is not None:
            judges_for(self.app).submit(host, arrived.timestamp())

    def turn(self) -> asyncio.Semaphore:
        """One expansion's turn (`async with`): the recovery job's take theirs too."""
        return self._turns

    async def drain(self, timeout_s: float = DRAIN_S) -> None:
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=timeout_s)


def expansions_for(app: Any) -> Expansions:
    """The app's expansions: half its ingest workers may expand at once (at least one)."""
    found: Expansions | None = getattr(app.state, "expansions", None)
    if found is None:
        workers = app.state.ingest_pool.workers
        found = app.state.expansions = Expansions(app, max(1, workers // 2))
    return found


async def ingest_pool_job(app: Any) -> None:
    """One of the app's background jobs: the workers live as long as the server."""
    pool: IngestPool = app.state.ingest_pool
    try:
        await pool.warm_up()
        log.info("%d ingest worker process(es) ready", pool.workers)
        await asyncio.Event().wait()
    finally:
        await expansions_for(app).drain()  # what is not expanded by then is recovered later
        await asyncio.to_thread(pool.close)


def failed(exc: Exception, what: str) -> None:
    """Log a failed expansion: one line when the database is away for a moment (a
    PostgreSQL restart fails every expansion under way; the recovery job stores them), the
    stack for anything else."""
    if database_unavailable(exc):
        log.warning("%s: the database is unavailable (%s)", what,
                    type(getattr(exc, "orig", None) or exc).__name__)
    else:
        log.error("%s", what, exc_info=exc)


async def recover_once(app: Any, pool: IngestPool) -> int:
    """Expand the reports left received since before RECOVER_AFTER_S ago; how many."""
    cutoff = utcnow() - timedelta(seconds=RECOVER_AFTER_S)
    ids = await run_in_threadpool(_unexpanded, app.state.sessionmaker, cutoff)
    gate, recovered = gate_for(app), 0
    for received_id in ids:
        try:
            async with expansions_for(app).turn():
                host = await pool.expand_stored(received_id)
        except Exception as exc:  # noqa: BLE001 - counted on the row; tried again next round
            gate.stats.expand_failed += 1
            failed(exc, f"recovering received report {received_id} failed")
            continue
        if host is not None:
            recovered += 1
            gate.stats.recovered += 1
            judges_for(app).submit(host)
    return recovered


def _unexpanded(sessions: Any, cutoff: datetime) -> list[int]:
    with sessions() as session:
        return unexpanded(session, cutoff)


async def recovery_job(app: Any) -> None:
    """One of `serve`'s background jobs: `recover_once` every RECOVER_EVERY_S, once the
    ingest workers are up."""
    while True:
        await asyncio.sleep(RECOVER_EVERY_S)
        pool: IngestPool = app.state.ingest_pool
        if not pool.ready:
            continue
        try:
            count = await recover_once(app, pool)
        except Exception as exc:  # noqa: BLE001 - the server must keep serving
            failed(exc, "recovering received reports failed; retrying")
            continue
        if count:
            log.warning("expanded %d report(s) left received (stored whole, answered, "
                        "not expanded: a worker or server stopped first)", count)
