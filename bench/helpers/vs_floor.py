"""The project against the floor (bench/helpers/floor.py), report for report, on every run.

The same 8-GPU sweep report and the same inventory report go, alternately, to the project
(what the route does: parse, check, the ingest transaction, then the post-commit hook that
judges and runs the alert rules) and to the floor prototype on a database of its own. Each
side's CPU is the serving thread's (`time.thread_time`) plus, on PostgreSQL, its backend's
(/proc/<pid>/stat of the connection's `pg_backend_pid()`, 10 ms ticks, so a mean over the
reports). CPU rather than wall time: the 2-core machine is shared, and CPU moves far less.

Targets: sweep <= 60 ms server CPU and <= 90 ms with PostgreSQL's (<= 2.5x the
floor); inventory <= 12 ms server CPU.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import event

from bench.helpers.floor import Floor
from bench.helpers.ingest_stages import backend_cpu_s, proc_cpu_s, serve_once
from bench.helpers.size import sized
from peerwatch.app.runtime import heap

REPEAT = sized(9, 2)
# ms of server CPU, ms with PostgreSQL's, the most times the floor (with PostgreSQL's)
TARGETS = {"sweep": (60.0, 90.0, 2.5), "inventory": (12.0, None, None)}


@dataclass
class Cost:
    """Per report: the serving thread's CPU ms (median), the database backend's (mean), and
    the SQL statements the project sent (median; the floor's are fixed: see floor.py)."""

    server_ms: float
    db_ms: float
    statements: float = 0.0

    @property
    def with_db_ms(self) -> float:
        return self.server_ms + self.db_ms


def _cost(handle: Callable[[bytes], None], db_cpu: Callable[[], float],
          bodies: list[bytes]) -> Cost:
    server, db_start = [], db_cpu()
    for body in bodies:
        t = time.thread_time()
        handle(body)
        server.append((time.thread_time() - t) * 1000)
    return Cost(statistics.median(server), (db_cpu() - db_start) * 1000 / len(bodies))


def project_handler(app: Any) -> Callable[[bytes], None]:
    """What the server does for one report: the route's work and its post-commit hook.
    The hook never raises (it logs); a judgement that failed would make the figure that of
    a broken path, so it stops the bench instead."""
    from peerwatch.app.judging.service import service_for

    def handle(body: bytes) -> None:
        result = serve_once(app, body)
        if not result.duplicate and service_for(app).after_ingest(result.host) is None:
            raise RuntimeError(f"judging {result.host} after ingest failed (logged above)")
    return handle


def counting(engine: Any, handle: Callable[[bytes], None]
             ) -> tuple[Callable[[bytes], None], list[int]]:
    """`handle`, counting the SQL statements each call sends through `engine`."""
    counts: list[int] = []

    def counted(body: bytes) -> None:
        seen = [0]

        def hook(*_: Any) -> None:
            seen[0] += 1
        event.listen(engine, "before_cursor_execute", hook)
        try:
            handle(body)
        finally:
            event.remove(engine, "before_cursor_execute", hook)
        counts.append(seen[0])
    return counted, counts


def compare(app: Any, floor: Floor, kinds: dict[str, Callable[[int], list[bytes]]]
            ) -> dict[str, tuple[Cost, Cost]]:
    """(project, floor) cost per report kind; each kind's bodies alternate between the two,
    report by report, so both see the same machine."""
    heap.settle(again=True)  # as the server does once started (app/runtime/heap.py)
    project, counts = counting(app.state.engine, project_handler(app))
    project_db = backend_cpu_s(app.state.engine)
    floor_db = proc_cpu_s(floor.backend_pid())
    out = {}
    for kind, make in kinds.items():
        for body in make(2):  # warm: connections, caches, the floor's state rows
            project(body)
            floor.store(body)
        ours, theirs = [], []
        counts.clear()
        for p_body, f_body in zip(make(REPEAT), make(REPEAT), strict=True):
            ours.append(_cost(project, project_db, [p_body]))
            theirs.append(_cost(floor.store, floor_db, [f_body]))
        out[kind] = (_combined(ours, statistics.median(counts)), _combined(theirs))
    return out


def _combined(costs: list[Cost], statements: float = 0.0) -> Cost:
    return Cost(statistics.median(c.server_ms for c in costs),
                statistics.fmean(c.db_ms for c in costs), statements)


def _verdict(figure: float, target: float) -> str:
    return f"{figure / target:.0%} of it, {'met' if figure <= target else 'MISSED'}"


def print_comparison(backend: str, figures: dict[str, tuple[Cost, Cost]]) -> None:
    """Each issue-19 target with its figure and the ratio to the floor."""
    for kind, (ours, floor) in figures.items():
        server_target, db_target, ratio_target = TARGETS[kind]
        print(f"  {backend} {kind} vs the floor, server CPU per report: project "
              f"{ours.server_ms:.1f} ms, floor {floor.server_ms:.1f} ms = "
              f"{ours.server_ms / max(floor.server_ms, 1e-9):.1f}x the floor; target <= "
              f"{server_target:.0f} ms: {_verdict(ours.server_ms, server_target)}")
        print(f"    SQL statements per {kind} (ingest + judgement + rules): "
              f"{ours.statements:.0f}")
        if backend != "postgresql":
            continue
        ratio = ours.with_db_ms / max(floor.with_db_ms, 1e-9)
        targets = [f"<= {ratio_target}x the floor: {_verdict(ratio, ratio_target)}"
                   ] if ratio_target else []
        if db_target is not None:
            targets.append(f"<= {db_target:.0f} ms: {_verdict(ours.with_db_ms, db_target)}")
        print(f"    with PostgreSQL's CPU: project {ours.with_db_ms:.1f} ms (backend "
              f"{ours.db_ms:.1f}), floor {floor.with_db_ms:.1f} ms (backend {floor.db_ms:.1f})"
              f" = {ratio:.1f}x the floor" + (f"; target {'; '.join(targets)}" if targets else ""))
