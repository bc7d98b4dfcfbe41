"""The CPU priority of the processes `serve` starts below the server's own event loop, and
short turns on a core for that loop (`shorten_turns`).

The server process only answers (refusals from the headers, `/healthz` from memory, reads),
and each answer needs a core for a fraction of a millisecond; its ingest workers and judge
children burn whole cores parsing, storing and judging. On a busy machine at equal priority
the kernel makes the woken event loop wait its turn behind every runnable worker, so a
refusal that costs next to nothing was answered late. Run `worker_nice` steps
nicer (`PEERWATCH_WORKER_NICE`), the workers still get every core nobody else wants — so
throughput on an otherwise idle machine is unchanged — but the loop runs first when it wakes.

Linux keeps niceness per thread, and a thread starts with its creator's: lower it first
thing in the process, before it starts threads (a pool, a watchdog), so all of them run at it.
"""

from __future__ import annotations

import ctypes
import logging
import os
import platform
import sys

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


# sched_setattr(2)'s number where the kernel has one we know; elsewhere turns stay as they are
SCHED_SETATTR = {"x86_64": 314, "aarch64": 274}
SCHED_GETATTR = {"x86_64": 315, "aarch64": 275}
SCHED_FLAG_RESET_ON_FORK = 0x01


class _SchedAttr(ctypes.Structure):
    """`struct sched_attr` of sched_setattr(2)."""

    _fields_ = [("size", ctypes.c_uint32), ("policy", ctypes.c_uint32),
                ("flags", ctypes.c_uint64), ("nice", ctypes.c_int32),
                ("priority", ctypes.c_uint32), ("runtime_ns", ctypes.c_uint64),
                ("deadline_ns", ctypes.c_uint64), ("period_ns", ctypes.c_uint64),
                ("util_min", ctypes.c_uint32), ("util_max", ctypes.c_uint32)]


def shorten_turns(slice_s: float) -> bool:
    """Ask for turns of `slice_s` on a core for this thread alone; True if the kernel took it.

    Niceness decides a thread's share of the CPU; how soon a woken thread runs is the
    scheduler's other choice. Linux's EEVDF scheduler (6.12+) lets a thread ask for a
    shorter slice than the default (`sched_runtime` of sched_setattr(2), for the normal
    policy; 0.1 ms at least): its virtual deadline comes sooner, so when it wakes it
    preempts the thread running and is picked first, without taking a larger share, so a
    sleeper woken on a busy machine starts late less often and by less. The threads and
    processes it starts get the default back
    (SCHED_FLAG_RESET_ON_FORK), so only the one thread that asked answers sooner. Older
    kernels keep their turns as they are (the call succeeds or fails, nothing else changes).
    """
    machine = platform.machine()
    if sys.platform != "linux" or machine not in SCHED_SETATTR or slice_s <= 0:
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    attr = _SchedAttr()
    if libc.syscall(SCHED_GETATTR[machine], 0, ctypes.byref(attr), ctypes.sizeof(attr), 0):
        return False
    attr.size = ctypes.sizeof(attr)  # policy and niceness as they are: only the slice moves
    attr.flags |= SCHED_FLAG_RESET_ON_FORK
    attr.runtime_ns = int(slice_s * 1e9)
    if libc.syscall(SCHED_SETATTR[machine], 0, ctypes.byref(attr), 0):
        log.info("the kernel keeps this thread's turns on a core as they are (errno %d)",
                 ctypes.get_errno())
        return False
    return True
