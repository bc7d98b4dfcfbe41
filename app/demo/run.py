"""Start the whole demo — server, live fleet, backfilled history — and stop it cleanly.

Order matters for "data within seconds": the database is migrated and the server listens
first, then the live fleet starts (every host sends an inventory report at once and its
first sweep within seconds), and only when every host has reported does the backfill of
the past day begin in the background (it would otherwise compete for the CPU). SIGINT
(Ctrl-C) or SIGTERM stops the fleet (undelivered reports go to the spool), the backfill
(between two reports) and the server, in that order.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any, TextIO

import psutil
from sqlalchemy import func, select

from peerwatch.app.alerting.settings import AlertingSettings
from peerwatch.app.demo.backfill import Backfill, BackfillPlan
from peerwatch.app.demo.fleet import DEFAULT_HOSTS, DEFAULT_RACKS, plan_fleet, plan_racks
from peerwatch.app.demo.jobs import store_demo_jobs
from peerwatch.app.demo.live import LiveFleet, LiveIntervals
from peerwatch.app.demo.network import run_network_story
from peerwatch.app.demo.scenario import Scenario, default_scenario
from peerwatch.app.demo.server import ServerThread
from peerwatch.app.runtime.config import Settings
from peerwatch.app.runtime.config_errors import read_settings
from peerwatch.app.runtime.credentials import Role, issue
from peerwatch.app.runtime.keyring import ensure_keys, secret_path
from peerwatch.app.runtime.signals import stop_on_signals
from peerwatch.app.schemas.maintenance import MaintenanceRequest
from peerwatch.app.server import build_server_app
from peerwatch.app.services.maintenance import declare_window
from peerwatch.app.store.db import make_engine, upgrade_to_head
from peerwatch.app.store.tables.history import ReportRow
from peerwatch.probes.report import utcnow

log = logging.getLogger(__name__)
# history waits for every host's first report, at most this long (a host whose probe hangs
# must not hold it back for ever; the wait costs nothing, the history comes later)
FIRST_REPORTS_WAIT_S = 120.0
HISTORY_STAMP = "history-started-at"  # in the data directory: when the first run began


@dataclass
class DemoOptions:
    port: int = 8000
    bind: str = "127.0.0.1"
    data_dir: Path = Path("data/demo")
    hosts: int = DEFAULT_HOSTS
    racks: int = DEFAULT_RACKS  # GB200 NVL72 racks of 18 simulated trays each
    seed: int = 0
    backfill_hours: float = 24.0
    admin_token: str | None = None  # None: a random one, printed
    intervals: LiveIntervals = field(default_factory=LiveIntervals)


# The default fleet has three boards of each preset: a group of three is the demo's minimum
# (the median of three still ignores one slow board); a real fleet keeps the default of 5.
DEMO_PEER_MIN_HOSTS = 3
# The demo's probes (a dozen boards in one process) post at the same moments on one small
# machine: a report may wait this long for a slot rather than be refused and spooled.
DEMO_INGEST_WAIT_S = 2.0


def demo_settings(options: DemoOptions, admin_token: str | None = None) -> Settings:
    """Server settings tuned to the demo's fast clock: staleness and degradation in minutes.
    No fleet-wide token: each simulated host reports with its own credential."""
    database = (options.data_dir / "peerwatch.db").resolve()
    return read_settings(Settings, data_dir=options.data_dir,
                         database_url=f"sqlite:///{database}",
                         admin_token=admin_token, stale_after_s=60.0,
                         degraded_sustain_s=120.0, fleet_peer_min_hosts=DEMO_PEER_MIN_HOSTS,
                         fleet_peer_refresh_s=60.0, ingest_wait_s=DEMO_INGEST_WAIT_S,
                         max_connections_per_address=0)  # the whole fleet posts from loopback


def cpu_s(pid: int | None = None) -> float:
    """CPU seconds a process (this one by default) and its live children (the server's
    ingest workers and judge) have used so far."""
    me = psutil.Process(pid)
    spent = sum(me.cpu_times()[:2])
    for child in me.children(recursive=True):
        with suppress(psutil.Error):  # it ended meanwhile
            spent += sum(child.cpu_times()[:2])
    return spent


def history_age_s(data_dir: Path, new_database: bool, now: float) -> float:
    """Seconds since the demo's database was new (its backfill's "now"): 0 for a new one,
    else from the stamp the first run left in the data directory."""
    stamp = data_dir / HISTORY_STAMP
    if new_database or not stamp.exists():
        stamp.write_text(f"{now}\n")
        return 0.0
    try:
        return max(0.0, now - float(stamp.read_text()))
    except ValueError:
        return 0.0


def migrate_and_count(settings: Settings) -> int:
    """Migrate the demo's own database to head (a demo may: it owns the file); the number
    of reports already stored (a rerun keeps its history and skips the backfill)."""
    engine = make_engine(settings)
    try:
        upgrade_to_head(engine)
        with engine.connect() as conn:
            return conn.scalar(select(func.count()).select_from(ReportRow)) or 0
    finally:
        engine.dispose()


def run_demo(options: DemoOptions, out: TextIO = sys.stdout,
             stop: threading.Event | None = None) -> int:
    """Serve the demo until `stop` is set or SIGTERM/SIGINT comes. The handlers are in place
    before anything starts: a signal during the start (seconds on a loaded machine) stops
    the demo once it is up, with its judge and ingest processes, instead of killing this
    process and leaving them behind."""
    stop = stop or threading.Event()
    with stop_on_signals(stop.set):
        return _serve_demo(options, out, stop)


def _serve_demo(options: DemoOptions, out: TextIO, stop: threading.Event) -> int:
    settings = demo_settings(options, options.admin_token)
    options.data_dir.mkdir(parents=True, exist_ok=True)
    keys = ensure_keys(secret_path(settings.data_dir, settings.secret_file))
    admin_token = options.admin_token or issue(keys, Role.ADMIN, "demo")
    existing = migrate_and_count(settings)
    age_s = history_age_s(options.data_dir, existing == 0, time.time())
    app = build_server_app(settings)  # what `serve` runs, with its rollup/prune job
    try:
        server = ServerThread(app, host=options.bind, port=options.port).start()
    except RuntimeError as exc:
        print(f"peerwatch demo: cannot serve on {options.bind}:{options.port}: {exc}",
              file=sys.stderr)
        return 1
    fleet = plan_fleet(options.hosts, options.seed) + plan_racks(options.racks, options.seed)
    scenario = default_scenario(fleet)
    live = LiveFleet(fleet, scenario, server.url, partial(issue, keys, Role.PROBE),
                     options.data_dir / "spool", options.intervals)
    live_start = utcnow()
    _declare_maintenance(app, scenario, live_start)
    if existing == 0:
        store_demo_jobs(app.state.sessionmaker, fleet, scenario, live_start)
    live.start()
    _announce(out, server.url, options, fleet_names=[h.name for h in fleet],
              story=scenario.describe(age_s), admin_token=admin_token)
    backfill_thread = None
    backfill_stop = threading.Event()
    if options.backfill_hours > 0 and existing == 0:
        plan = BackfillPlan(span_s=options.backfill_hours * 3600.0)
        backfill = Backfill(fleet, scenario, app.state.sessionmaker, settings, live_start,
                            plan, backfill_stop)
        backfill_thread = threading.Thread(target=_backfill, args=(backfill, live, stop, out),
                                           name="demo-backfill", daemon=True)
        backfill_thread.start()
    elif existing:
        print(f"  history: {existing} reports already stored in {options.data_dir}; "
              "no backfill", file=out, flush=True)
    while not stop.wait(0.5):
        pass
    print("peerwatch demo: stopping ...", file=out, flush=True)
    backfill_stop.set()
    live.stop()
    if backfill_thread is not None:
        backfill_thread.join(15.0)
    server.stop()
    print("peerwatch demo: stopped", file=out, flush=True)
    return 0


def _declare_maintenance(app: Any, scenario: Scenario, now: datetime) -> None:
    """The scenario's planned windows, declared the way an operator would (the admin API's
    service), so the demo shows a fault inside one: judged and shown, not paged."""
    with app.state.sessionmaker() as session:
        for m in scenario.maintenance:
            declare_window(session, MaintenanceRequest(
                host=m.host, duration_s=m.hours * 3600, created_by="demo",
                comment=m.comment), now)


def _backfill(backfill: Backfill, live: LiveFleet, stop: threading.Event, out: TextIO) -> None:
    """Once every live host's first report has had its outcome (the first data is on
    screen), fill in history. The wait is on that condition, not on a short clock: on a
    loaded machine a start that took longer than a fixed few seconds let the backfill begin
    beside the first reports and slow them further."""
    started = psutil.Process().create_time()
    deadline = time.monotonic() + FIRST_REPORTS_WAIT_S
    first = None
    while live.answered() < len(live.hosts) and time.monotonic() < deadline:
        if first is None and live.reporting():
            first = time.time() - started
        if stop.wait(0.1):
            return
    every, cpu = time.time() - started, cpu_s()
    print(f"  first data: the first host reported {first or every:.1f} s after start, "
          f"{live.reporting()} of {len(live.hosts)} hosts after {every:.1f} s "
          f"({cpu:.1f} s of CPU)", file=out, flush=True)
    if backfill.stop.is_set():
        return
    try:
        hosts = [h.name for h in backfill.fleet if h.rack is None]
        story = run_network_story(backfill.sessions, backfill.settings, AlertingSettings(),
                                  hosts)
        print(f"  {story}", file=out, flush=True)
    except Exception:  # noqa: BLE001 - the live demo goes on without the network story
        log.exception("demo network story failed")
    try:
        stats = backfill.run()
    except Exception:  # noqa: BLE001 - the live demo goes on without history
        log.exception("demo backfill failed")
        return
    state = "backfilled" if stats.done else "backfill stopped after"
    print(f"  history: {state} {stats.reports} reports ({stats.measurements} measurements) "
          f"of the past {backfill.plan.span_s / 3600:g} h in {stats.seconds:.1f} s",
          file=out, flush=True)


def _announce(out: TextIO, url: str, options: DemoOptions, fleet_names: list[str],
              story: list[str], admin_token: str) -> None:
    lines = [
        "peerwatch demo: a simulated fleet reporting to a real server",
        f"  dashboard: {url}/",
        f"  API docs:  {url}/docs",
        f"  admin credential: {admin_token} (silences, acknowledgements: "
        "Authorization: Bearer <credential>; each host reports with its own)",
        f"  data:      {options.data_dir.resolve()}",
        f"  hosts:     {', '.join(fleet_names)}",
        f"  intervals: inventory every {options.intervals.inventory_s:g} s, sweeps every "
        f"{options.intervals.sweep_s:g} s",
        "  what happens (time from now):",
        *(f"    {line}" for line in story),
        "  Ctrl-C stops everything.",
    ]
    print("\n".join(lines), file=out, flush=True)
