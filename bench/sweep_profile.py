"""Where one 8-GPU sweep's server CPU goes, stage by stage (against the sweep target).

The sweep report of bench/ingest.py, served as the route does (parse + validate, the ingest
transaction, then the post-commit hook: load the stored state, judge, write, alert rules) on
PostgreSQL (`--sqlite`: on SQLite, whose SQL runs in the serving thread's CPU), after 7 days
of that host's history (2 h at smoke size). Each stage's CPU is the serving thread's
(`time.thread_time`) inside the function that does it, inclusive of what it calls; medians
over the timed sweeps. `--cprofile` prints the hottest functions instead. `--keep NAME`
keeps the database (preloaded once) between runs (SQLite: /tmp/NAME.db).

Then the sweep against the honest floor (bench/helpers/floor.py: the same validation, a
verdict at every level, no alert rules and no words), the same reports alternately: CPU of
this thread, CPU with PostgreSQL's backend, and instructions (the same sweeps and floor
runs again in a second process under callgrind, `bench/helpers/instructions.py`; this
machine has no hardware counters for `perf stat`), each as a ratio to the floor against
the target of 2.5x (issue 37). `--no-instructions` leaves the callgrind run out.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import orjson
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from bench.helpers import instructions
from bench.helpers.cli import parser
from bench.helpers.floor import Floor
from bench.helpers.ingest_stages import backend_cpu_s, proc_cpu_s, serve_once
from bench.helpers.size import sized
from bench.ingest import (
    PG_ADMIN_URL,
    TOKEN,
    bodies,
    full_report,
    postgres_url,
    preload_history,
    sqlite_url,
)
from peerwatch.app.ingest import posted as route
from peerwatch.app.judging import evaluate, judge, load, store, write
from peerwatch.app.judging.service import service_for
from peerwatch.app.main import create_app
from peerwatch.app.runtime import heap
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.db import make_engine, upgrade_to_head
from peerwatch.probes.report import Report

SWEEPS = sized(12, 2)
COUNTED = sized(3, 0)  # sweeps (and floor runs) counted under callgrind; none at smoke
# size, where the callgrind run (minutes on a loaded machine) is tests/bench/test_instructions.py
TARGET = 2.5  # the sweep's most, times the honest floor (issue 37)
# (module, function) -> stage; inclusive thread CPU of each call
STAGES: dict[tuple[Any, str], str] = {
    (route, "parse_report"): "parse + validate",
    (route, "check_report"): "check (coherence)",
    (route, "ingest"): "store (ingest transaction)",
    (store, "stored_rows"): "load: stored judged rows",
    (judge, "load_host"): "load: results, counters, peers",
    (load, "load_tests"): "load: tests' states + new results",
    (load, "link_rates"): "load: link rates",
    (load, "pcie_replay_rates"): "load: PCIe replay rates",
    (load, "rate_window_start"): "load: rate window start",
    (load, "group_stats"): "load: fleet peer stats",
    (load, "throttle_history"): "load: throttle history",
    (load, "host_spans"): "load: job spans",
    (load, "load_event_facts"): "load: events",
    (load, "fabric_of"): "load: fabric",
    (load, "fabric_manager_of"): "load: fabric manager",
    (judge, "judge_tests"): "judge_tests",
    (judge, "judge_loaded"): "judge (all, incl. judge_tests)",
    (judge, "checks_against"): "fleet peers (checks)",
    (store, "store"): "write",
    (write, "rows_of"): "write: rows_of",
    (evaluate, "load_context"): "alert rules: context",
    (evaluate, "findings_of"): "alert rules: findings",
    (evaluate, "apply_findings"): "alert rules: apply",
}


@contextmanager
def timed(stages: dict[str, float]) -> Iterator[None]:
    originals = {key: getattr(*key) for key in STAGES if hasattr(*key)}

    def wrap(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kw: Any) -> Any:
            t = time.thread_time()
            try:
                return fn(*args, **kw)
            finally:
                stages[name] += (time.thread_time() - t) * 1000
        return wrapper
    for (module, attr), fn in originals.items():
        setattr(module, attr, wrap(STAGES[(module, attr)], fn))
    try:
        yield
    finally:
        for (module, attr), fn in originals.items():
            setattr(module, attr, fn)


def sweep(app: Any, body: bytes) -> None:
    result = serve_once(app, body)
    assert not result.duplicate
    service_for(app).after_ingest(result.host)


def prepared_app(url: str, fresh: bool, report: Report) -> Any:
    """The app on `url`, migrated; on a fresh database, its first sweep of `report`'s host
    stored and judged, then bench/ingest.py's history preloaded."""
    settings = Settings(database_url=url, probe_tokens=[TOKEN], stale_after_s=1e9)
    engine = make_engine(settings)
    upgrade_to_head(engine)
    engine.dispose()
    app = create_app(settings)
    if fresh:
        sweep(app, bodies(report, 1)[0])
        preload_history(settings, report)
    return app


@contextmanager
def kept_database(name: str | None, sqlite: bool = False
                  ) -> Iterator[tuple[str | None, bool]]:
    """(url, fresh): a throwaway database (None: PostgreSQL unreachable), or `name` kept
    between runs."""
    if sqlite:
        with _sqlite_database(name) as kept:
            yield kept
        return
    if name is None:
        with postgres_url() as url:  # says "postgresql: skipped" when unreachable
            yield url, True
        return
    admin = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        fresh = conn.scalar(text("SELECT 1 FROM pg_database WHERE datname = :n"),
                            {"n": name}) is None
        if fresh:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    yield make_url(PG_ADMIN_URL).set(database=name).render_as_string(hide_password=False), fresh


@contextmanager
def _sqlite_database(name: str | None) -> Iterator[tuple[str | None, bool]]:
    if name is None:
        with sqlite_url() as url:
            yield url, True
        return
    path = Path(tempfile.gettempdir()) / f"{name}.db"
    yield f"sqlite:///{path}", not path.exists()


def main() -> int:
    args = parser(__doc__, __file__)
    args.add_argument("--keep", metavar="NAME", help="keep the database NAME between runs")
    args.add_argument("--cprofile", metavar="FILE", help="also dump the profile to FILE")
    args.add_argument("--sweeps", type=int, default=SWEEPS)
    args.add_argument("--sqlite", action="store_true", help="on SQLite, not PostgreSQL")
    args.add_argument("--no-instructions", action="store_true",
                      help="leave out the instruction counts (the callgrind run)")
    args.add_argument("--count-instructions", metavar="URL", help=argparse.SUPPRESS)
    opts = args.parse_args()
    report = full_report()
    if opts.count_instructions:  # the second process, under callgrind
        return _count(opts.count_instructions, report, opts)
    with kept_database(opts.keep, opts.sqlite) as (url, fresh):
        if url is None:
            return 0
        app = prepared_app(url, fresh, report)
        try:
            for body in bodies(report, 3):  # warm: seeded state, connections, caches
                sweep(app, body)
            warm, *timed_bodies = bodies(report, opts.sweeps + 1)  # the floor's warm-up first
            code = _measure(app, timed_bodies, warm, opts)
        finally:
            app.state.engine.dispose()
        if code == 0 and not opts.cprofile:
            _instructions(url, opts)
        return code


def _instructions(url: str, opts: argparse.Namespace) -> None:
    """The instructions of the same work, counted in a second process under callgrind."""
    why = ("--no-instructions" if opts.no_instructions else "smoke size" if not COUNTED
           else instructions.available())
    if why is not None:
        print(f"  instructions: not counted ({why})")
        return
    argv = ["-m", "bench.sweep_profile", "--count-instructions", url,
            "--sweeps", str(COUNTED), *(["--sqlite"] if opts.sqlite else [])]
    found = instructions.medians(instructions.counted(argv, timeout_s=1800))
    where = "SQLite's included" if opts.sqlite else "PostgreSQL's backend not counted"
    print(instructions.ratio_line(f"instructions (callgrind, {where})",
                                  found["sweep"] / 1e6, found["floor"] / 1e6, "M", TARGET))


def _count(url: str, report: Report, opts: argparse.Namespace) -> int:
    """Under callgrind: the sweeps and the floor's runs of the same reports, counted."""
    counter = instructions.Counter(instructions.out_file())
    app = prepared_app(url, False, report)
    try:
        sweep(app, bodies(report, 1)[0])  # warm
        heap.settle(again=True)  # as the server does once started
        with sqlite_url() if opts.sqlite else postgres_url() as floor_url:
            assert floor_url is not None
            warm, *counted = bodies(report, opts.sweeps + 1)
            floor = _floor(floor_url, warm)
            figures: dict[str, list[int]] = {"sweep": [], "floor": []}
            try:
                for body in counted:
                    figures["sweep"].append(counter.count(partial(sweep, app, body)))
                    figures["floor"].append(counter.count(partial(floor.store, body)))
            finally:
                floor.close()
        instructions.report(figures)
    finally:
        app.state.engine.dispose()
    return 0


def _measure(app: Any, timed_bodies: list[bytes], warm: bytes, opts: argparse.Namespace
             ) -> int:
    heap.settle(again=True)  # as the server does once started (app/runtime/heap.py)
    if opts.cprofile:
        prof = cProfile.Profile(time.thread_time)
        prof.enable()
        for body in timed_bodies:
            sweep(app, body)
        prof.disable()
        prof.dump_stats(opts.cprofile)
        pstats.Stats(prof).sort_stats("tottime").print_stats(45)
        pstats.Stats(prof).sort_stats("cumulative").print_stats(60)
        return 0
    per: dict[str, list[float]] = defaultdict(list)
    with sqlite_url() if opts.sqlite else postgres_url() as floor_url:
        if floor_url is None:
            raise RuntimeError("PostgreSQL went away between two databases")
        floor = _floor(floor_url, warm)
        ours_db, floor_db = backend_cpu_s(app.state.engine), proc_cpu_s(floor.backend_pid())
        db = {"ours": 0.0, "floor": 0.0}
        try:
            for body in timed_bodies:  # the project's sweep, then the floor's, the same report
                before = ours_db()
                stages: dict[str, float] = defaultdict(float)
                with timed(stages):
                    t = time.thread_time()
                    sweep(app, body)
                    stages["total"] = (time.thread_time() - t) * 1000
                db["ours"] += ours_db() - before
                for name, ms in stages.items():
                    per[name].append(ms)
                t, before = time.thread_time(), floor_db()
                floor.store(body)
                per["floor"].append((time.thread_time() - t) * 1000)
                db["floor"] += floor_db() - before
        finally:
            floor.close()
    backend = "SQLite" if opts.sqlite else "PostgreSQL"
    print(f"server CPU per 8-GPU sweep on {backend}, median of {len(timed_bodies)} (ms):")
    for name, values in sorted(per.items(), key=lambda kv: -statistics.median(kv[1])):
        if name != "floor":
            print(f"  {name:<34} {statistics.median(values):7.2f}")
    total, floor_ms = statistics.median(per["total"]), statistics.median(per["floor"])
    print(f"the sweep vs the honest floor (bench/helpers/floor.py: same validation, every "
          f"verdict level), same reports, median of {len(timed_bodies)}:")
    print(instructions.ratio_line("CPU, this thread", total, floor_ms, "ms", None))
    if not opts.sqlite:  # the backends' /proc CPU: 10 ms ticks, so a mean over the sweeps
        n = len(timed_bodies)
        print(instructions.ratio_line("CPU with PostgreSQL's backend",
                                      total + db["ours"] * 1000 / n,
                                      floor_ms + db["floor"] * 1000 / n, "ms", TARGET))
    return 0


def _floor(url: str, body: bytes) -> Floor:
    """The floor prototype on a database of its own, warmed with the report's host."""
    engine = make_engine(Settings(database_url=url))
    upgrade_to_head(engine)
    engine.dispose()
    floor = Floor(url, orjson.loads(body)["host"]["hostname"])
    floor.store(body)
    return floor


if __name__ == "__main__":
    raise SystemExit(main())
