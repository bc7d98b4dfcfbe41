"""Backpressure for `POST /api/v1/reports`: a bounded number of ingests per process.

An ingest holds one of `ingest_concurrency` slots from parsing to its commit (judging is
after, off the request path). Up to `ingest_queue` more reports wait for a slot, each at most
`ingest_wait_s` (1 s by default; 0: none waits); past that the process is saturated and
says so at once — 429 when the queue
is full or a newcomer would wait past `ingest_wait_s` by the recent time a slot is held (no
work done, not even reading the body: a refusal costs milliseconds, not the wait), 503 when
a wait ran out all the same — both with `Retry-After`, which probes honour with
jitter while they spool. A fleet that outruns the server thus gets fast refusals instead of
requests piling up until every probe times out and re-sends.

The door (`receiving`) decides before the body is read and counts a report it lets in from
then on, while its body arrives: reports arriving in the same instant are let in only as far
as the free slots and the queue go. Counted only once they asked for a slot, a burst of
sweeps posted at once all passed the door (no slot was taken yet), every body was received,
and then nearly all were refused: slow refusals, each paying for the whole burst's bodies.
But a body counts only for its first `ARRIVING_S`: one still arriving after that is not
about to want a slot, and counted for as long as it took, 36 clients sending their bodies
at 1 byte/s (with a valid token) kept the door shut for every real report. A slot is
taken only once a body is whole; one that never arrives is cut off by the server's body
deadline (PEERWATCH_BODY_TIMEOUT_S, app/api/http_guard.py).

Why the wait is a second and not a few tens of milliseconds (as it was): a newcomer is let
in when it expects a slot within half the wait, and half of a short wait is less than one
sweep's hold of a slot on a busy machine over the four slots. So at a real cadence a report
that would have had a slot soon was refused, and in a burst every report let in that waited
a little past the wait was a 503: a refusal that took at least the wait plus its body, and
the slowest refusals were theirs. With 1 s, a wait spans several holds and fewer overrun
it, but not none: when the machine's other load changes mid-burst the recent hold lags
behind, and a few refusals of a burst are still 503s after the wait. A refusal is still
decided at the door, at once. Before any report has let go of its slot the hold is unknown
and taken as `PRIOR_HOLD_S`: letting the full queue (32) wait, a burst of sweeps in one
instant after a start outlasted the wait on a loaded machine, and
letting only one round of the slots wait refused two dozen of the demo's first reports
(its 30 probes start together: "server unavailable" warnings on a quiet machine).

Under `serve` a report lets go of its slot once it is checked and stored whole, and is
expanded into rows after the answer (`app/ingest/expand.py`): the door then also refuses
while `expand_backlog` reports (slots + queue) are answered and not yet expanded, so a burst
of fast answers cannot pile up expansions without bound.

SQLite has one writer per database: its ingests also take `writer_lock`, so this process
never races itself into "database is locked" (other processes still wait on the busy
timeout, and a lock error that does come through is answered 503 with Retry-After).
The gate lives on `app.state`, one per app, like everything else here.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

from fastapi import HTTPException, status

from peerwatch.app.runtime.config import Settings

HOLD_WEIGHT = 0.2  # of the newest hold time in the running estimate
# A newcomer waits only when it expects a slot within this share of `wait_s`: hold times
# vary several-fold on a loaded machine, and a report let in to wait that then times out is
# a 503 after `wait_s` (slow) where a 429 at the door would have taken milliseconds.
ADMIT_SHARE = 0.5
# The hold assumed before any report has let go of a slot: about a sweep's store on a quiet
# machine, so the default 1 s wait lets ~20 wait at a cold start.
PRIOR_HOLD_S = 0.1
# How long a body still arriving counts as ahead of a newcomer at the door: a probe's body
# arrives in milliseconds on a data-centre network (16 MiB at 1 Gbit/s: 0.13 s).
ARRIVING_S = 0.5


class Saturated(HTTPException):
    """429/503 with Retry-After: this process cannot take the report now."""

    def __init__(self, code: int, retry_after_s: int, detail: str) -> None:
        super().__init__(code, detail=detail, headers={"Retry-After": str(retry_after_s)})


@dataclass
class GateStats:
    active: int = 0
    receiving: int = 0  # let in at the door, body still arriving
    waiting: int = 0
    accepted: int = 0
    refused_full: int = 0  # 429: queue full
    refused_wait: int = 0  # 503: waited ingest_wait_s
    refused_locked: int = 0  # 503: the database was locked
    client_gone: int = 0  # dropped before the expensive part
    expanding: int = 0  # answered, stored whole, waiting for or in their expansion (`serve`)
    recovered: int = 0  # expanded by the recovery job (app/ingest/expand.py)
    expand_failed: int = 0


class IngestGate:
    def __init__(self, settings: Settings, serialise_writers: bool) -> None:
        self.concurrency = settings.ingest_concurrency
        self.queue = settings.ingest_queue
        self.wait_s = settings.ingest_wait_s
        self.retry_after_s = settings.ingest_retry_after_s
        self.stats = GateStats()
        self._slots = asyncio.Semaphore(self.concurrency)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._writer_lock = threading.Lock() if serialise_writers else None
        self._hold_s: float | None = None  # recent time a report holds a slot (EWMA)
        self._arriving: dict[int, float] = {}  # bodies being received: when each began
        self._next_arrival = 0
        # answered reports waiting for or in their expansion, at most (`serve`)
        self.expand_backlog = settings.ingest_concurrency + settings.ingest_queue

    def _in_gate(self) -> int:
        return self.stats.active + self._arriving_now() + self.stats.waiting

    def _arriving_now(self) -> int:
        """Bodies being received that began within `ARRIVING_S` (slower ones do not count)."""
        since = time.monotonic() - ARRIVING_S
        return sum(1 for began in self._arriving.values() if began >= since)

    @property
    def saturated(self) -> bool:
        return (self._in_gate() >= self.concurrency + self.queue
                or self.stats.expanding >= self.expand_backlog)

    @contextlib.contextmanager
    def receiving(self) -> Iterator[None]:
        """Around reading the body, before `slot(admitted=True)`: 429 at once when there is
        no room for one more report (`_no_room`), so a saturated process spends no time
        receiving a report it would refuse anyway; else the report counts as in the gate
        while its body arrives, and the next one at the door sees it."""
        if self._no_room():
            raise self._full()
        self.stats.receiving += 1
        arrival, self._next_arrival = self._next_arrival, self._next_arrival + 1
        self._arriving[arrival] = time.monotonic()
        try:
            yield
        finally:
            self.stats.receiving -= 1
            del self._arriving[arrival]

    def _no_room(self) -> bool:
        """Every slot is (or is about to be) taken and the queue is full, or a newcomer would
        wait past `wait_s` for its slot (by the recent time a report holds one): refusing now
        beats a 503 after the wait. Reports still arriving count as ahead of it, for their
        first `ARRIVING_S`. Under
        `serve`, also when the reports answered and not yet expanded fill `expand_backlog`:
        a slot is let go at the answer, and what bounds the work then is the expansions."""
        if self.stats.expanding >= self.expand_backlog:
            return True
        ahead = self._in_gate() - self.concurrency  # before it in the queue
        if ahead < 0:
            return False
        if ahead >= self.queue or self.wait_s <= 0:
            return True
        hold = PRIOR_HOLD_S if self._hold_s is None else self._hold_s
        expected = (ahead + 1) * hold / self.concurrency
        return expected > ADMIT_SHARE * self.wait_s

    def _full(self) -> Saturated:
        self.stats.refused_full += 1
        return Saturated(status.HTTP_429_TOO_MANY_REQUESTS, self.retry_after_s,
                         f"ingest saturated: {self.stats.active} reports in progress, "
                         f"{self.stats.waiting} waiting and {self.stats.expanding} answered "
                         "and waiting for their rows; retry later")

    def _held_for(self, seconds: float) -> None:
        """A slot was held this long: the running estimate the queue's wait is judged by."""
        self._hold_s = seconds if self._hold_s is None else \
            (1 - HOLD_WEIGHT) * self._hold_s + HOLD_WEIGHT * seconds

    @contextlib.asynccontextmanager
    async def slot(self, admitted: bool = False) -> AsyncIterator[None]:
        """Hold an ingest slot, or raise `Saturated` (429 at once, 503 after the wait);
        `admitted`: let in at the door already (`receiving`), so it may wait its turn."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # a new loop (tests' clients): its own semaphore
            self._loop, self._slots = loop, asyncio.Semaphore(self.concurrency)
        if not self._slots.locked():
            await self._slots.acquire()  # a free slot: taken at once, before anyone else runs
        elif not admitted and self._no_room():
            raise self._full()
        else:
            await self._wait_for_slot()
        self.stats.active += 1
        taken = time.monotonic()
        try:
            yield
        finally:
            self.stats.active -= 1
            self._held_for(time.monotonic() - taken)
            self._slots.release()

    async def _wait_for_slot(self) -> None:
        self.stats.waiting += 1
        try:
            await asyncio.wait_for(self._slots.acquire(), self.wait_s)
        except TimeoutError:
            self.stats.refused_wait += 1
            raise Saturated(status.HTTP_503_SERVICE_UNAVAILABLE, self.retry_after_s,
                            f"no ingest slot free within {self.wait_s:g} s; retry later"
                            ) from None
        finally:
            self.stats.waiting -= 1

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        """Around the database write (in a worker thread): one at a time on SQLite."""
        if self._writer_lock is None:
            yield
            return
        with self._writer_lock:
            yield

    def worker_died(self) -> Saturated:
        """An ingest worker process died with this report (it may be stored: its retry is
        recognised by report_id)."""
        self.stats.refused_locked += 1
        return Saturated(status.HTTP_503_SERVICE_UNAVAILABLE, self.retry_after_s,
                         "an ingest worker stopped while storing this report; retry later")

    def locked(self) -> Saturated:
        """The answer to a "database is locked" that got past the busy timeout."""
        self.stats.refused_locked += 1
        return Saturated(status.HTTP_503_SERVICE_UNAVAILABLE, self.retry_after_s,
                         "the database is locked by another writer; retry later")


def gate_for(app: Any) -> IngestGate:
    """The app's gate, made on first use from `app.state` (settings, engine)."""
    gate: IngestGate | None = getattr(app.state, "ingest_gate", None)
    if gate is None:
        sqlite = app.state.engine.dialect.name == "sqlite"
        gate = IngestGate(app.state.settings, serialise_writers=sqlite)
        app.state.ingest_gate = gate
    return gate
