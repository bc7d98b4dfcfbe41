"""How long a process waited for a core (Linux /proc schedstat), and how idle the machine was.

A refusal or `/healthz` answered late by a server whose event loop is idle most of the time
is late for one of two reasons: the loop was busy with other requests, or it was runnable
and the CPU scheduler ran something else (ingest workers, judges, PostgreSQL, the bench's
own clients on the same cores). The kernel counts the second for every thread:
`/proc/<pid>/task/<tid>/schedstat` is "ns on a CPU, ns runnable but waiting, turns on a
CPU". Under uvicorn the event loop is the process's main thread (tid == pid), so its wait
per turn is the server-side figure of "no turn for the loop", apart from any client's lag.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Sched:
    run_ns: int
    wait_ns: int
    turns: int

    def __sub__(self, other: Sched) -> Sched:
        return Sched(self.run_ns - other.run_ns, self.wait_ns - other.wait_ns,
                     self.turns - other.turns)

    @property
    def wait_ms_per_turn(self) -> float | None:
        """Mean wait for a core each time the thread became runnable."""
        return self.wait_ns / 1e6 / self.turns if self.turns else None


def main_thread(pid: int) -> Sched:
    """The schedstat of `pid`'s main thread (the event loop of a uvicorn server)."""
    run, wait, turns = Path(f"/proc/{pid}/task/{pid}/schedstat").read_text().split()[:3]
    return Sched(int(run), int(wait), int(turns))


def machine_idle() -> tuple[int, int]:
    """(idle + iowait, all) jiffies of every core since boot (/proc/stat)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    return fields[3] + fields[4], sum(fields[:8])


def idle_share(before: tuple[int, int], after: tuple[int, int]) -> float | None:
    """The share of the machine's CPU time that was idle between two `machine_idle()`."""
    total = after[1] - before[1]
    return (after[0] - before[0]) / total if total else None
