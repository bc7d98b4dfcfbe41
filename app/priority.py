"""The CPU priority of the processes `serve` starts: below the server's own event loop.

The server process only answers (refusals from the headers, `/healthz` from memory, reads),
and each answer needs a core for a fraction of a millisecond; its ingest workers and judge
children burn whole cores parsing, storing and judging. On a busy machine at equal priority
the kernel makes the woken event loop wait its turn behind every runnable worker, so a
refusal that costs microseconds was answered in 100+ ms (issue 19). Run `worker_nice` steps
nicer (`PEERWATCH_WORKER_NICE`), the workers still get every core nobody else wants — so
throughput on an otherwise idle machine is unchanged — but the loop runs first when it wakes.

Linux keeps niceness per thread, and a thread starts with its creator's: lower it first
thing in the process, before it starts threads (a pool, a watchdog), so all of them run at it.
"""

from __future__ import annotations

import logging
import os

log = logging.getLogger(__name__)


def lower_priority(steps: int) -> int:
    """Make this thread (and the threads it starts from now on) `steps` nicer; its niceness
    after. A platform without `os.nice`, or one that refuses, leaves it as it is."""
    if not hasattr(os, "nice"):
        return 0
    if steps > 0:
        try:
            os.nice(steps)
        except OSError as exc:  # a sandbox that forbids it: same priority, still correct
            log.warning("could not lower this process's CPU priority by %d: %s", steps, exc)
    return os.nice(0)

