"""The collector pauses of app/heap.py: nested pauses of several threads keep it off until
the last one ends, a collector someone else turned off stays off, and pauses that overlap
past MAX_PAUSE_S still collect cyclic garbage."""

from __future__ import annotations

import gc
import threading
import weakref
from collections.abc import Iterator

import pytest

from app import heap


@pytest.fixture(autouse=True)
def collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_nested_pauses_of_two_threads_end_with_the_last() -> None:
    inside, release = threading.Event(), threading.Event()

    def other() -> None:
        with heap.collector_paused():
            inside.set()
            release.wait(60)

    thread = threading.Thread(target=other)
    with heap.collector_paused():
        assert not gc.isenabled()
        thread.start()
        assert inside.wait(60)
    assert not gc.isenabled()  # the other thread's pause goes on
    release.set()
    thread.join(60)
    assert gc.isenabled()


def test_a_collector_turned_off_elsewhere_stays_off() -> None:
    gc.disable()
    with heap.collector_paused():
        pass
    assert not gc.isenabled()


class _Cycle:
    def __init__(self) -> None:
        self.me = self


def test_overlapping_pauses_past_the_limit_collect(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(heap, "MAX_PAUSE_S", 0.0)
    with heap.collector_paused():
        garbage = _Cycle()
        gone = weakref.ref(garbage)
        del garbage
        with heap.collector_paused():
            pass  # an inner exit past the limit: one full collection
        assert gone() is None
        assert not gc.isenabled()
    assert gc.isenabled()
