"""Where an ingest's server time goes: parse, validation, each write, baselines, the hook.

Each stage is timed by wrapping the function that does it (and SQL time per table by the
engine's cursor events), around the same calls the route makes: `parse_report`,
`check_report`, `ingest`, then the post-commit `after_ingest`. Used by bench/ingest.py to
print the breakdown of a sweep and of an inventory report on each backend.
"""

from __future__ import annotations

import os
import re
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, event
from sqlalchemy.orm import Session

from peerwatch.app.api import wire_body
from peerwatch.app.ingest import posted as route
from peerwatch.app.ingest import rows as ingest_service

# module attribute -> stage name; a name missing from a module is simply not timed
WRAPPED: dict[tuple[Any, str], str] = {
    (route, "parse_report"): "parse + validate (all)",
    (Session, "commit"): "commit",
    (wire_body, "load_json"): "parse JSON",
    (wire_body, "validate_wire"): "validate (wire model)",
    (route, "check_report"): "validate (coherence)",
    (ingest_service, "stored_result"): "duplicate check",
    (ingest_service, "store_inventory"): "inventory upsert",
    (ingest_service, "_measurement_rows"): "build rows",
    (ingest_service, "_sample_rows"): "build rows",
    (ingest_service, "insert_rows"): "insert rows (bulk)",
}
INSERT = re.compile(r"^\s*(?:INSERT INTO|COPY)\s+\"?(\w+)", re.IGNORECASE)


class Stages:
    """Accumulated milliseconds per stage over the calls made while installed."""

    def __init__(self) -> None:
        self.ms: dict[str, float] = defaultdict(float)
        self.calls = 0

    def add(self, name: str, seconds: float) -> None:
        self.ms[name] += seconds * 1000

    def per_call(self) -> dict[str, float]:
        return {k: v / max(self.calls, 1) for k, v in self.ms.items()}


def _timed(stages: Stages, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kw: Any) -> Any:
        t = time.perf_counter()
        try:
            return fn(*args, **kw)
        finally:
            stages.add(name, time.perf_counter() - t)
    return wrapper


@contextmanager
def staged(engine: Engine) -> Iterator[Stages]:
    """Install the timers (and SQL timing of inserts per table) for the duration."""
    stages = Stages()
    originals = {key: getattr(*key) for key in WRAPPED if hasattr(*key)}
    for (module, attr), fn in originals.items():
        setattr(module, attr, _timed(stages, WRAPPED[(module, attr)], fn))
    started: dict[int, float] = {}

    def before(conn: Any, cursor: Any, statement: str, *_: Any) -> None:
        started[id(cursor)] = time.perf_counter()

    def after(conn: Any, cursor: Any, statement: str, *_: Any) -> None:
        match = INSERT.match(statement)
        if match:
            stages.add(f"insert {match.group(1)}",
                       time.perf_counter() - started.pop(id(cursor), time.perf_counter()))

    event.listen(engine, "before_cursor_execute", before)
    event.listen(engine, "after_cursor_execute", after)
    try:
        yield stages
    finally:
        event.remove(engine, "before_cursor_execute", before)
        event.remove(engine, "after_cursor_execute", after)
        for (module, attr), fn in originals.items():
            setattr(module, attr, fn)


def serve_once(app: Any, body: bytes) -> Any:
    """What the route does with `body` before its post-commit hook, without HTTP: parse,
    check, ingest (one transaction), through the function the route's thread calls, for a
    body a current probe wrote (its wire models are the server's: known by its bytes)."""
    from peerwatch.probes.report import utcnow

    return route.store_posted(app.state.sessionmaker, body, app.state.settings, utcnow(),
                              canonical=True)


def hook_ms(app: Any, host: str) -> float:
    """The post-commit hook the route calls (judging and alert rules), timed on its own."""
    from peerwatch.app.judging.service import service_for

    t = time.perf_counter()
    service_for(app).after_ingest(host)
    return (time.perf_counter() - t) * 1000


@dataclass
class Profile:
    """Medians over the reports of one kind: wall ms (hook excluded), this process's CPU ms,
    the database backend's CPU ms (PostgreSQL; a mean, /proc counts 10 ms ticks), the
    post-commit hook's wall ms, and the stages' wall ms."""

    wall_ms: float
    app_cpu_ms: float
    db_cpu_ms: float
    hook_ms: float
    stages: dict[str, float]

    @property
    def cpu_ms(self) -> float:
        return self.app_cpu_ms + self.db_cpu_ms


def proc_cpu_s(pid: int | None) -> Callable[[], float]:
    """CPU seconds used so far by process `pid` (user + system, from /proc; 10 ms ticks);
    0 where there is none or it runs on another machine."""
    if pid is None:
        return lambda: 0.0
    path, tick = Path(f"/proc/{pid}/stat"), os.sysconf("SC_CLK_TCK")

    def read() -> float:
        try:
            fields = path.read_text().rsplit(")", 1)[1].split()
        except OSError:  # another machine's database: not counted
            return 0.0
        return (int(fields[11]) + int(fields[12])) / tick
    return read


def backend_cpu_s(engine: Engine) -> Callable[[], float]:
    """CPU seconds used so far by the PostgreSQL backend behind the pool's connection (a
    single-threaded caller keeps getting that one); 0 on SQLite, which runs in-process."""
    if engine.dialect.name != "postgresql":
        return lambda: 0.0
    with engine.connect() as conn:
        pid = conn.connection.dbapi_connection.info.backend_pid  # type: ignore[union-attr]
    return proc_cpu_s(pid)


def profile(app: Any, bodies: list[bytes]) -> Profile:
    """Serve each of `bodies` (each a different report) as the route would; the figures."""
    per_stage: dict[str, list[float]] = defaultdict(list)
    walls, cpus, hooks = [], [], []
    db_cpu = backend_cpu_s(app.state.engine)
    db_start = db_cpu()
    db_in_hooks = 0.0
    for body in bodies:
        with staged(app.state.engine) as stages:
            t, c = time.perf_counter(), time.thread_time()
            result = serve_once(app, body)
            walls.append((time.perf_counter() - t) * 1000)
            cpus.append((time.thread_time() - c) * 1000)
        before_hook = db_cpu()
        hooks.append(hook_ms(app, result.host))
        db_in_hooks += db_cpu() - before_hook
        for name, ms in stages.ms.items():
            per_stage[name].append(ms)
    db_ms = (db_cpu() - db_start - db_in_hooks) * 1000 / len(bodies)
    # a stage absent from a call took 0 ms in it
    medians = {k: statistics.median(v + [0.0] * (len(bodies) - len(v)))
               for k, v in per_stage.items()}
    return Profile(statistics.median(walls), statistics.median(cpus), db_ms,
                   statistics.median(hooks), medians)


def combined(profiles: list[Profile]) -> Profile:
    """Medians over profiles of one report each (the database CPU: a mean, as in one)."""
    names = {k for p in profiles for k in p.stages}
    return Profile(
        statistics.median(p.wall_ms for p in profiles),
        statistics.median(p.app_cpu_ms for p in profiles),
        statistics.fmean(p.db_cpu_ms for p in profiles),
        statistics.median(p.hook_ms for p in profiles),
        {k: statistics.median(p.stages.get(k, 0.0) for p in profiles) for k in names})
