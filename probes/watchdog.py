"""Run transfer tests under a time limit, so a hung GPU cannot stall the whole sweep.

The limit can only *abandon* a call, never stop it: a CUDA call blocked in the driver cannot
be interrupted or killed from another thread (Python has no thread cancellation, and the
driver holds the context). Tests therefore run in a daemon worker thread; when the limit
passes, the caller gets `TransferTimeout` and moves on, and the worker stays blocked until
the driver lets go (or the process exits). The next test gets a fresh worker. The sweep then
treats the GPUs of the hung test as hung for the rest of the pass, because further calls
into a wedged context would block too; only a new process (the next probe pass, or a GPU
reset by an operator) can recover them.

One worker serves test after test while none hangs: starting a thread per test costs about
a millisecond, as much as a whole simulated test.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from peerwatch.probes.errors import TransferTimeout

T = TypeVar("T")


class _Job:
    def __init__(self, fn: Callable[[], Any]) -> None:
        self.fn = fn
        self.done = threading.Event()
        self.value: Any = None
        self.error: BaseException | None = None


class Watchdog:
    """Calls functions in a worker thread, giving up on any that outlives `timeout_s`."""

    def __init__(self, timeout_s: float | None) -> None:
        self.timeout_s = timeout_s
        self._jobs: queue.SimpleQueue[_Job | None] | None = None

    def call(self, fn: Callable[[], T], what: str) -> T:
        """`fn()` if it returns within the limit (None: no limit), else TransferTimeout."""
        if self.timeout_s is None:
            return fn()
        job = _Job(fn)
        self._worker().put(job)
        if not job.done.wait(self.timeout_s):
            self.close()  # the stuck worker ends if its call ever returns; the next gets a new one
            raise TransferTimeout(f"{what} did not finish within {self.timeout_s:g} s; abandoned")
        if job.error is not None:
            raise job.error
        return job.value  # type: ignore[no-any-return]

    def close(self) -> None:
        """Let the idle worker end (a stuck one ends when its call returns, if ever)."""
        if self._jobs is not None:
            self._jobs.put(None)
            self._jobs = None

    def _worker(self) -> queue.SimpleQueue[_Job | None]:
        if self._jobs is None:
            jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
            threading.Thread(target=_serve, args=(jobs,), name="peerwatch-test",
                             daemon=True).start()
            self._jobs = jobs
        return self._jobs


def _serve(jobs: queue.SimpleQueue[_Job | None]) -> None:
    while (job := jobs.get()) is not None:
        try:
            job.value = job.fn()
        except BaseException as exc:  # handed to the caller's thread
            job.error = exc
        job.done.set()
