"""The cyclic collector and a long-lived server: settle the heap once started, and no
collections in the middle of a report's ingest or a host's judgement.

A started server holds a few hundred thousand long-lived objects (modules, SQLAlchemy's
mappers and compiled statements, pydantic's schemas). CPython's cyclic collector walks all of
them in every full collection, and a sweep's judgement keeps enough objects alive for its
length (the host's judged rows, their states, the new results) to trigger one every couple
of judgements: on the ingest bench's process, collections were a large share of a sweep
judgement's CPU. Two remedies, neither changing behaviour, only
what the collector visits and when:
- `settle()`, once a process has started (the server, each ingest worker, the judge
  process): collect what start-up left behind and move everything alive into the
  permanent generation (`gc.freeze()`), so later collections walk only objects made since
  (the usual recipe for a long-running server process). Unsettled, the judge process spent
  22 % of its time in the full collections below (py-spy, 1000-host fleet bench): each one
  walked every imported module's objects;
- `collector_paused()` around one ingest or judgement, whose objects die by reference count
  at its end: young collections in the middle of it would only promote them.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

_settled = threading.Event()
_lock = threading.Lock()


def settle(again: bool = False) -> bool:
    """Collect, then freeze everything alive; True the first time in this process (or with
    `again`: a bench that starts one app after another, as one server process each)."""
    with _lock:
        if _settled.is_set() and not again:
            return False
        gc.collect()
        gc.freeze()
        _settled.set()
        return True


MAX_PAUSE_S = 2.0  # overlapping pauses (several judging threads) collect at least this often
_pause_lock = threading.Lock()
_holders = 0
_owned = False  # the collector is off because of these pauses (not someone else's choice)
_paused_since = 0.0


@contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic collection while inside: for a unit of work that keeps thousands of
    objects alive for its length and frees them by reference count at its end (a sweep's
    judgement: its judged rows, states and results). Young collections in the middle of it
    only promote what is about to die, and still cost a judgement real CPU with the heap
    settled. Process-wide and counted, so pauses of several threads nest;
    pauses that overlap for longer than MAX_PAUSE_S run one full collection at the next
    exit, so cycles never pile up for long. A collector someone else turned off stays off."""
    global _holders, _owned, _paused_since
    with _pause_lock:
        if _holders == 0 and gc.isenabled():
            gc.disable()
            _owned, _paused_since = True, time.monotonic()
        _holders += 1
    try:
        yield
    finally:
        with _pause_lock:
            _holders -= 1
            if _owned and _holders == 0:
                gc.enable()
                _owned = False
            elif _owned and time.monotonic() - _paused_since > MAX_PAUSE_S:
                gc.collect()
                _paused_since = time.monotonic()
