"""SIGTERM and SIGINT as a request to stop, for the long-running commands (probe, demo).

One place, so each command stops the same way: the handler only asks (sets an event, tells a
worker), the loop ends after its current step, and the previous handlers come back after.
Outside the main thread (a test running the demo in a thread) signals cannot be handled, so
nothing is installed there.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
log = logging.getLogger("peerwatch")


@contextmanager
def stop_on_signals(request_stop: Callable[[], None]) -> Iterator[None]:
    """Within the block, SIGTERM or SIGINT calls `request_stop` (once per signal received)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, _frame: object) -> None:
        log.info("%s received: stopping", signal.Signals(signum).name)
        request_stop()

    previous = {s: signal.signal(s, handler) for s in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
