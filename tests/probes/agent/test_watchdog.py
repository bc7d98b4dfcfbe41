"""The watchdog abandons a call that outlives its limit and keeps serving the next ones."""

from __future__ import annotations

import threading

import pytest

from peerwatch.probes.errors import TransferError, TransferTimeout
from peerwatch.probes.watchdog import Watchdog


def test_results_and_errors_come_back_to_the_caller() -> None:
    dog = Watchdog(1.0)
    try:
        assert dog.call(lambda: 42, "answer") == 42

        def boom() -> None:
            raise TransferError("verification failed")

        with pytest.raises(TransferError, match="verification failed"):
            dog.call(boom, "boom")
        assert dog.call(lambda: "still serving", "after") == "still serving"
    finally:
        dog.close()


def test_a_call_past_the_limit_is_abandoned_and_the_next_runs_on_a_fresh_worker() -> None:
    release = threading.Event()
    dog = Watchdog(0.05)
    try:
        with pytest.raises(TransferTimeout, match="stuck did not finish within 0.05 s"):
            dog.call(lambda: release.wait(10), "stuck")
        assert dog.call(threading.current_thread, "next").name == "peerwatch-test"
    finally:
        release.set()
        dog.close()


def test_no_limit_runs_inline() -> None:
    assert Watchdog(None).call(threading.current_thread, "x") is threading.current_thread()
