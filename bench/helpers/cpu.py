"""CPU seconds of the processes a bench started (Linux /proc): on a shared machine, the
figure load moves least. `serve` runs its judging in a child process and stores reports in
worker processes forked by a fork server (its grandchildren), so a server's cost is its own
CPU plus all its descendants', and the two are shown apart (where the work runs)."""

from __future__ import annotations

import os
from pathlib import Path

from sqlalchemy import create_engine, text


def _stat(pid: int | str) -> list[str]:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process."""
    fields = _stat(pid)
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _parents() -> dict[int, int]:
    """pid -> parent pid of every live process (one pass over /proc)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                found[int(entry.name)] = int(_stat(entry.name)[1])
            except (OSError, ValueError, IndexError):
                continue  # gone meanwhile
    return found


def child_pids(pid: int) -> list[int]:
    """The live child processes of `pid`."""
    return [child for child, parent in _parents().items() if parent == pid]


def descendant_pids(pid: int) -> list[int]:
    """Every live process below `pid`: children, theirs, and so on (the ingest workers are
    the fork server's children, not the server's)."""
    parents = _parents()
    found, todo = [], [pid]
    while todo:
        above = todo.pop()
        below = [child for child, parent in parents.items() if parent == above]
        found += below
        todo += below
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
    """(the server process's CPU seconds, its descendants': judge and ingest processes)."""
    return cpu_s(pid), _total(descendant_pids(pid))


def cmdline(pid: int) -> str:
    """A process's command line, its arguments spaced ("" once it is gone)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def serve_parts_s(pid: int) -> dict[str, float]:
    """CPU seconds of a `serve` process's parts: the server process itself (HTTP, the gate),
    its judge children, and the rest of its descendants (the fork server and the ingest
    workers it forked)."""
    judges = [c for c in child_pids(pid) if " judge " in cmdline(c)]
    below_judges = {d for j in judges for d in [j, *descendant_pids(j)]}
    ingest = [d for d in descendant_pids(pid) if d not in below_judges]
    return {"server": cpu_s(pid), "judge": _total(sorted(below_judges)),
            "ingest": _total(ingest)}


def servers_cpu_split() -> tuple[float, float]:
    """Over every server this process started: (their own CPU seconds, their descendants')."""
    servers = child_pids(os.getpid())
    return _total(servers), _total([c for s in servers for c in descendant_pids(s)])


def backends_cpu_s(url: str) -> float:
    """CPU seconds of the PostgreSQL backends connected to this database now."""
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            pids = list(conn.scalars(text(
                "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                "AND pid <> pg_backend_pid()")))
    finally:
        engine.dispose()
    total = 0.0
    for pid in pids:
        try:
            total += cpu_s(pid)
        except OSError:
            continue  # gone meanwhile
    return total
