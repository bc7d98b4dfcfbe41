"""Run one transfer test under a time limit, so a hung GPU cannot stall the whole sweep.

The limit can only *abandon* a call, never stop it: a CUDA call blocked in the driver cannot
be interrupted or killed from another thread (Python has no thread cancellation, and the
driver holds the context). The test therefore runs in a daemon thread; when the limit passes,
the caller gets `TransferTimeout` and moves on, and the thread stays blocked until the driver
lets go (or the process exits). The sweep then treats that GPU as hung and runs nothing more
on it in this pass, because further calls into a wedged context would block too. Only a new
process (the next probe pass, or a GPU reset by an operator) can recover it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

from probes.errors import TransferTimeout

T = TypeVar("T")


def call_with_timeout(fn: Callable[[], T], timeout_s: float | None, what: str) -> T:
    """`fn()` if it returns within `timeout_s` (None: no limit), else TransferTimeout."""
    if timeout_s is None:
        return fn()
    outcome: dict[str, object] = {}

    def target() -> None:
        try:
            outcome["value"] = fn()
        except BaseException as exc:  # handed to the caller's thread below
            outcome["error"] = exc

    worker = threading.Thread(target=target, name=f"peerwatch-test {what}", daemon=True)
    worker.start()
    worker.join(timeout_s)
    if worker.is_alive():
        raise TransferTimeout(f"{what} did not finish within {timeout_s:g} s; abandoned")
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["value"]  # type: ignore[return-value]
