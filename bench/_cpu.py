"""CPU seconds of the processes a bench started (Linux /proc): on a shared machine, the
figure load moves least. `serve` runs its judging in a child process, so a server's cost is
its own CPU plus its children's, and the two are shown apart (where the work runs)."""

from __future__ import annotations

import os
from pathlib import Path


def _stat(pid: int | str) -> list[str]:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process."""
    fields = _stat(pid)
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def child_pids(pid: int) -> list[int]:
    """The live child processes of `pid`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int(_stat(entry.name)[1]) == pid:
                    found.append(int(entry.name))
            except (OSError, ValueError, IndexError):
                continue  # gone meanwhile
    return found


def _total(pids: list[int]) -> float:
    total = 0.0
    for pid in pids:
        try:
            total += cpu_s(pid)
        except OSError:
            continue
    return total


def cpu_split(pid: int) -> tuple[float, float]:
    """(the server process's CPU seconds, its children's: the judge process)."""
    return cpu_s(pid), _total(child_pids(pid))


def servers_cpu_split() -> tuple[float, float]:
    """Over every server this process started: (their own CPU seconds, their children's)."""
    servers = child_pids(os.getpid())
    return _total(servers), _total([c for s in servers for c in child_pids(s)])
