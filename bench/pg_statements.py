"""PostgreSQL's CPU per 8-GPU sweep, statement by statement, beside the floor.

On a database of its own with the bench's history (bench/ingest.py's preload), each sweep
goes through what the route and its post-commit hook do (bench/helpers/vs_floor.py); around every
statement the backend's CPU is read from /proc/<pid>/schedstat (nanoseconds, not /proc's
10 ms ticks), and between them: the
COPYs and the COMMITs. Printed: the backend's CPU per sweep in all, then per
statement (its first words), most first, and the server thread's CPU. With `--floor` the
floor prototype's sweeps alternate with the project's, as bench/helpers/vs_floor.compare does.
"""

from __future__ import annotations

import re
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import event, text

from bench.helpers.cli import parser as cli_parser
from bench.helpers.floor import Floor
from bench.helpers.vs_floor import compare, print_comparison, project_handler
from bench.ingest import bodies, full_report, inventory_report, postgres_url
from bench.sweep_profile import kept_database, prepared_app
from peerwatch.app.ingest import rows as ingest
from peerwatch.app.main import create_app
from peerwatch.app.runtime import heap
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.db import make_engine, upgrade_to_head


def schedstat_ns(pid: int) -> Callable[[], int]:
    """Nanoseconds process `pid` has run on a CPU so far (/proc/<pid>/schedstat)."""
    path = Path(f"/proc/{pid}/schedstat")
    return lambda: int(path.read_text().split()[0])


def statement_name(sql: str) -> str:
    """A statement's first words and its table, enough to tell one sweep's apart."""
    words = re.sub(r"\s+", " ", sql).strip()
    select = re.match(r"(SELECT .{0,40}).*? FROM (\w+)", words)
    if select:
        return f"{select.group(1)} ... FROM {select.group(2)}"
    head = re.match(r"(INSERT INTO \w+|UPDATE \w+|DELETE FROM \w+|WITH .{0,60}|\w+)", words)
    return head.group(0) if head else words[:60]


BETWEEN = "between statements"


def per_statement(app: Any, sweeps: list[bytes]) -> tuple[dict[str, list[int]], list[int],
                                                          list[float]]:
    """(backend ns per statement name, over all sweeps; backend ns per sweep; server ms per
    sweep), serving `sweeps` one by one. What the backend spends between statements counts
    as COMMIT after a commit, else as BETWEEN (the bulk COPYs run on the raw connection)."""
    engine = app.state.engine
    with engine.connect() as conn:
        pid = conn.connection.dbapi_connection.info.backend_pid
    cpu = schedstat_ns(pid)
    by: dict[str, list[int]] = defaultdict(list)
    label, since = [BETWEEN], [0]  # what the backend's CPU since `since` counts as

    def mark(next_label: str) -> None:
        now = cpu()
        by[label[0]].append(now - since[0])
        label[0], since[0] = next_label, now

    def before(_conn: Any, _cursor: Any, sql: str, *_: Any) -> None:
        mark(statement_name(sql))

    def after(*_: Any) -> None:
        mark(BETWEEN)

    def commit(*_: Any) -> None:
        mark("COMMIT")

    def copying(session: Any, model: Any, rows: Any) -> None:
        mark(f"COPY {model.__tablename__}")
        copy_rows(session, model, rows)
        mark(BETWEEN)

    copy_rows = ingest.insert_rows
    handle = project_handler(app)
    for body in sweeps[:3]:  # warm: seeded state, connections, caches
        handle(body)
    listeners = {"before_cursor_execute": before, "after_cursor_execute": after,
                 "commit": commit}
    per_sweep, server = [], []
    for name, fn in listeners.items():
        event.listen(engine, name, fn)
    ingest.insert_rows = copying  # each bulk COPY of the ingest named apart
    try:
        for body in sweeps[3:]:
            start, t = cpu(), time.thread_time()
            label[0], since[0] = BETWEEN, start
            handle(body)
            mark(BETWEEN)
            server.append((time.thread_time() - t) * 1000)
            per_sweep.append(cpu() - start)
    finally:
        ingest.insert_rows = copy_rows
        for name, fn in listeners.items():
            event.remove(engine, name, fn)
    return by, per_sweep, server


def main() -> int:
    parser = cli_parser(__doc__, __file__)
    parser.add_argument("--sweeps", type=int, default=15)
    parser.add_argument("--keep", metavar="NAME", help="keep the database NAME between runs")
    parser.add_argument("--floor", action="store_true",
                        help="also bench/helpers/vs_floor.compare (sweeps, inventory reports)")
    args = parser.parse_args()
    report = full_report()
    with kept_database(args.keep) as (url, fresh):
        if url is None:
            return 1
        app = prepared_app(url, fresh, report)
        settings = app.state.settings
        heap.settle(again=True)
        try:
            by, per_sweep, server = per_statement(app, bodies(report, args.sweeps + 3))
            time.sleep(1.0)  # statistics reach pg_stat_user_tables within a second
            with app.state.engine.connect() as conn:  # the pool's one connection
                prepared = conn.execute(text(
                    "SELECT count(*), coalesce(sum(generic_plans), 0), "
                    "coalesce(sum(custom_plans), 0) FROM pg_prepared_statements")).one()
                updates = conn.execute(text(
                    "SELECT relname, n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables "
                    "WHERE relname LIKE 'judged%' AND n_tup_upd > 0 ORDER BY relname")).all()
        finally:
            app.state.engine.dispose()
        n = len(per_sweep)
        print(f"backend CPU per sweep: mean {statistics.fmean(per_sweep) / 1e6:.1f} ms, "
              f"median {statistics.median(per_sweep) / 1e6:.1f} ms; server thread CPU "
              f"median {statistics.median(server):.1f} ms ({n} sweeps)")
        for name, ns in sorted(by.items(), key=lambda kv: -sum(kv[1])):
            print(f"  {sum(ns) / n / 1e6:6.2f} ms  x{len(ns) / n:4.1f}  {name}")
        print(f"prepared on the connection (psycopg's prepare_threshold): {prepared[0]} "
              f"statements, {prepared[1]} generic plans run, {prepared[2]} custom")
        print("row updates in place (HOT) since the database was made: " + ", ".join(
            f"{table} {hot:,} of {total:,}" for table, total, hot in updates))
        if args.floor:
            with postgres_url() as floor_url:
                assert floor_url is not None
                floor_engine = make_engine(Settings(database_url=floor_url))
                upgrade_to_head(floor_engine)
                floor_engine.dispose()
                floor = Floor(floor_url, report.host.hostname)
                app = create_app(settings)
                try:
                    inventory = inventory_report(report)
                    figures = compare(app, floor, {
                        "sweep": lambda k: bodies(report, k),
                        "inventory": lambda k: bodies(inventory, k)})
                finally:
                    app.state.engine.dispose()
                    floor.close()
                print_comparison("postgresql", figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
