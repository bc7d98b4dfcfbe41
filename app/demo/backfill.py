"""A day of history for the demo fleet, so every chart has data the moment it opens.

Each host gets a second simulated fabric (same preset, host name and GPU UUIDs as its live
one) on a fake clock that walks through the past day. At every step the scenario's faults
for that time are applied and the real report builder runs with timestamps of that time;
the report goes through the server's own validation and ingest service (`check_report`,
`ingest`) directly, not over HTTP, because a day for a dozen hosts is a few thousand
reports. Steps go oldest first across all hosts, so the history fills evenly; the live
fleet runs meanwhile. Lifetime counters of the history fabric and the live one do not
join up at "now": the server sees that as a counter reset, which it handles.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy.orm import Session, sessionmaker

from peerwatch.app.api.report_checks import check_report
from peerwatch.app.demo.faults import apply_faults
from peerwatch.app.demo.fleet import DemoHost
from peerwatch.app.demo.gpu_jobs import map_host
from peerwatch.app.demo.scenario import Scenario
from peerwatch.app.ingest.rows import ingest
from peerwatch.app.runtime.config import Settings
from peerwatch.probes.agent.passes import report_builder
from peerwatch.probes.config import ProbeSettings
from peerwatch.probes.report import Report, ReportKind, utcnow
from peerwatch.probes.sim.simulated import SimulatedFabric

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BackfillPlan:
    span_s: float = 86_400.0  # how far back history reaches
    inventory_every_s: float = 1_800.0
    sweep_every_s: float = 7_200.0  # a multiple of inventory_every_s
    pause_s: float = 0.01  # after each report, so live probes' writes get the database
    # ...and at least this share of the time the report took to store: the backfill writes
    # at most half the time, so the live probes' reports never queue behind it into 429s
    yield_share: float = 1.0


@dataclass
class BackfillStats:
    reports: int = 0
    measurements: int = 0
    rejected: int = 0
    seconds: float = 0.0
    done: bool = False


class _FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class _HistoryHost:
    def __init__(self, host: DemoHost, settings: ProbeSettings,
                 wall: Callable[[], datetime]) -> None:
        self.host = host
        self.name = host.name
        self.pace = host.pace
        assert settings.job_mapping_dir is not None
        self.mapping = settings.job_mapping_dir / host.name
        settings = settings.model_copy(update={"job_mapping_dir": self.mapping})
        self.clock = _FakeClock()
        self.fabric = SimulatedFabric(host.preset, seed=host.seed + 7919, hostname=host.name,
                                      clock=self.clock, rack=host.rack)
        self.build = report_builder(self.fabric, settings, now=wall, watchdog=False)


class Backfill:
    """Generate and ingest the past day, oldest first; `stop` ends it between reports."""

    def __init__(self, fleet: list[DemoHost], scenario: Scenario,
                 sessions: sessionmaker[Session], settings: Settings, live_start: datetime,
                 plan: BackfillPlan | None = None, stop: threading.Event | None = None) -> None:
        self.fleet, self.scenario = fleet, scenario
        self.sessions, self.settings = sessions, settings
        self.live_start = live_start
        self.plan = plan or BackfillPlan()
        self.stop = stop or threading.Event()
        self.stats = BackfillStats()
        self._t = -self.plan.span_s  # scenario time of the step being generated

    def _wall(self) -> datetime:
        return self.live_start + timedelta(seconds=self._t)

    def run(self) -> BackfillStats:
        started = time.perf_counter()
        probe_settings = ProbeSettings(token="backfill", kubelet_socket=None,
                                       job_mapping_dir=self.settings.data_dir / "job-history")
        hosts = [_HistoryHost(h, probe_settings, self._wall) for h in self.fleet]
        plan = self.plan
        steps = int(plan.span_s // plan.inventory_every_s)
        sweep_every = max(1, round(plan.sweep_every_s / plan.inventory_every_s))
        for step in range(steps):
            self._t = -plan.span_s + step * plan.inventory_every_s
            for host in hosts:
                if self.stop.is_set():
                    return self._finish(started, done=False)
                if step % host.pace:
                    continue  # a slower-paced host (a rack's tray) reports every pace-th step
                sweep = step % (sweep_every * host.pace) == 0
                kind = ReportKind.SWEEP if sweep else ReportKind.INVENTORY
                host.clock.now = self._t + plan.span_s
                apply_faults(host.fabric, self.scenario.faults_at(host.name, self._t))
                map_host(host.mapping, self.fleet, host.host, self._t)  # the jobs then
                took = time.perf_counter()
                self._ingest(host.build(kind))
                took = time.perf_counter() - took
                self.stop.wait(max(plan.pause_s, plan.yield_share * took))
        return self._finish(started, done=True)

    def _ingest(self, report: Report) -> None:
        now = utcnow()
        problems = check_report(report, now)
        if problems:
            self.stats.rejected += 1
            log.error("backfill: report of %s rejected: %s", report.host.hostname, problems[0])
            return
        with self.sessions() as session:
            result = ingest(session, report, self.settings, now)
        self.stats.reports += 1
        self.stats.measurements += result.measurements

    def _finish(self, started: float, done: bool) -> BackfillStats:
        self.stats.seconds = time.perf_counter() - started
        self.stats.done = done
        return self.stats
