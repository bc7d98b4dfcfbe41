"""`serve` runs its judge children and its ingest workers' expansion threads
`PEERWATCH_WORKER_NICE` steps below its own CPU priority, the ingest workers' other threads
(a report's check and store whole, which its POST waits for) `PEERWATCH_RECEIVE_NICE` steps,
and its event loop thread alone with the kernel's shortest turns on a core, so the loop gets
a core first when it wakes (app/runtime/priority.py).

A real `peerwatch serve` on each backend: the judge is its child, the ingest workers the
children of its fork server; each of their threads (read from /proc) is exactly that many
steps nicer than the server, whose own threads keep the server's niceness; where the kernel
takes short turns (EEVDF, 6.12+), the loop thread has them and no worker thread does.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from bench.helpers.cpu import child_pids, cmdline
from bench.helpers.serve import interrupt, wait_for_healthz
from peerwatch.app.cli.commands.serve import LOOP_SLICE_S
from peerwatch.app.runtime.config import Settings
from tests.app.judging.test_process import serve
from tests.conftest import SETTLE_S, eventually

STEPS = 7
RECEIVE_STEPS = 3  # PEERWATCH_RECEIVE_NICE: a worker's checks and stores whole, apart


def _nices_by_thread(pid: int) -> dict[int, int]:
    """Thread id -> the niceness of that thread of `pid` (Linux keeps it per thread)."""
    found = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found[int(task.name)] = int((task / "stat").read_text().rsplit(")", 1)[1]
                                        .split()[16])
        except (OSError, ValueError, IndexError):
            continue  # a thread that ended meanwhile
    return found


def _thread_nices(pid: int) -> set[int]:
    """The niceness of every thread of `pid`."""
    return set(_nices_by_thread(pid).values())


def _worker_nices(pid: int) -> tuple[int | None, set[int]]:
    """(an ingest worker's main thread's niceness: where it checks and stores a report whole,
    its other threads': its expansion thread and its watch on the server)."""
    nices = _nices_by_thread(pid)
    return nices.pop(pid, None), set(nices.values())


def _slices_ns(pid: int) -> dict[int, int]:
    """thread id -> its turn on a core (`se.slice`, ns), for the threads of `pid` that show one."""
    found = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            lines = (task / "sched").read_text().splitlines()
        except OSError:
            continue
        for line in lines:
            if line.startswith("se.slice"):
                found[int(task.name)] = int(line.split(":")[1])
    return found


def _kernel_takes_short_turns() -> bool:
    code = ("from peerwatch.app.runtime.priority import shorten_turns; "
            f"print(shorten_turns({LOOP_SLICE_S}))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=SETTLE_S)
    return done.stdout.strip() == "True"


def _workers(server: int, wanted: int) -> tuple[int, list[int]] | None:
    """(the judge's pid, the ingest workers' pids) once all `wanted` workers are up."""
    children = child_pids(server)
    judges = [p for p in children if " judge " in cmdline(p)]
    forkservers = [p for p in children if "forkserver" in cmdline(p)]
    workers = [w for f in forkservers for w in child_pids(f)]
    if len(judges) != 1 or len(workers) != wanted:
        return None
    return judges[0], workers


def test_serve_runs_its_workers_nicer_than_its_event_loop(db_url: str, tmp_path: Path
                                                          ) -> None:
    own = os.nice(0)
    proc, base = serve(db_url, tmp_path, PEERWATCH_WORKER_NICE=str(STEPS),
                       PEERWATCH_RECEIVE_NICE=str(RECEIVE_STEPS),
                       PEERWATCH_INGEST_CONCURRENCY="2")
    try:
        wait_for_healthz(base, timeout_s=SETTLE_S)
        found = eventually(lambda: _workers(proc.pid, 1 if "sqlite" in db_url else 2))
        assert found is not None, "serve did not start its judge and ingest workers"
        judge, workers = found
        expected, receiving = min(19, own + STEPS), min(19, own + RECEIVE_STEPS)
        assert _thread_nices(proc.pid) == {own}  # the event loop keeps the server's priority
        # each lowers its own once started (imports first)
        eventually(lambda: _thread_nices(judge) == {expected})
        assert _thread_nices(judge) == {expected}, (cmdline(judge), _thread_nices(judge))
        # a worker receives at RECEIVE_STEPS (its main thread, and the watch thread it
        # starts), its expansion thread runs at STEPS
        for pid in workers:
            eventually(lambda pid=pid: _worker_nices(pid) == (receiving, {receiving, expected}))
            assert _worker_nices(pid) == (receiving, {receiving, expected}), \
                _nices_by_thread(pid)
        if _kernel_takes_short_turns():
            short = int(LOOP_SLICE_S * 1e9)
            loop = _slices_ns(proc.pid)
            assert loop[proc.pid] == short, loop  # the event loop's thread
            assert all(ns != short for tid, ns in loop.items() if tid != proc.pid), loop
            for pid in (judge, *workers):
                assert short not in _slices_ns(pid).values(), cmdline(pid)
    finally:
        interrupt(proc)


def test_lower_priority_steps_down_from_where_the_process_is() -> None:
    """0 steps leaves the process as it is; n steps make it n nicer (19 at most). In a child:
    a process cannot take its niceness back."""
    code = ("import os; from peerwatch.app.runtime.priority import lower_priority; "
            "print(os.nice(0), lower_priority(0), lower_priority(3))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=SETTLE_S)
    assert done.returncode == 0, done.stderr
    start, after_none, after_three = (int(x) for x in done.stdout.split())
    assert after_none == start and after_three == min(19, start + 3)
    assert Settings.model_fields["worker_nice"].default == 10  # as docs/server.md says
    assert Settings.model_fields["receive_nice"].default == 0
