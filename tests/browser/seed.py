"""Hosts of our own for the browser tests, built by the simulated fabric and stored in the
server's database the way the ingest route stores them.

`SimHost.history(...)` runs real probe passes (`probes.sweep.build_report`) at backdated
times, so the server holds what a probe would have sent over the last hour: a few healthy
sweeps, then the faults. The fabric's clock follows the same fake time, so counters grow
the way they would have. `SimHost.inventory_now()` is the pass a live probe sends every few
seconds; the tests send one now and then, so the host never turns stale under them.

`Store` writes through `app.ingest.rows.ingest` (the POST route's own code, minus HTTP)
into the database of a running `peerwatch demo`, whose probe token is its own secret, and
then evaluates the alert rules for the host as the route does after each report.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from peerwatch.app.alerting.settings import AlertingSettings
from peerwatch.app.demo.network import run_pair_job
from peerwatch.app.demo.run import DemoOptions, demo_settings
from peerwatch.app.ingest.rows import ingest
from peerwatch.app.judging.network import evaluate_network
from peerwatch.app.judging.service import AlertingService
from peerwatch.app.judging.sessions import make_sessionmaker
from peerwatch.app.runtime.config import Settings
from peerwatch.app.schemas.maintenance import MaintenanceRequest
from peerwatch.app.schemas.network import NetworkMapIn
from peerwatch.app.services import network as network_writes
from peerwatch.app.services.maintenance import declare_window
from peerwatch.app.store.db import make_engine
from peerwatch.probes.report import HOSTNAME, Report, ReportKind, TestName
from peerwatch.probes.sim.faults import Fault
from peerwatch.probes.sim.simnet import SimNetwork, network_map
from peerwatch.probes.sim.simulated import SimulatedFabric
from peerwatch.probes.sweep import SweepOptions, build_report

# A quick sweep: enough tests to fill the matrix selector, cheap enough to build in ms.
QUICK_TESTS = (TestName.CE_WRITE, TestName.CE_BIDIR, TestName.LATENCY)


class FakeClock:
    """Seconds that only move when told: drives the fabric's counters and the report times."""

    def __init__(self, start: datetime) -> None:
        self.start = start
        self.seconds = 0.0

    def __call__(self) -> float:
        return self.seconds

    def now(self) -> datetime:
        return self.start + timedelta(seconds=self.seconds)


@dataclass(frozen=True)
class Episode:
    """From `at_s` seconds into the history on, these faults are in (cumulative)."""

    at_s: float
    faults: tuple[Fault, ...]


def _legacy_named(report: Report, hostname: str) -> Report:
    """`report` under a name today's ingest refuses (HTML): what a database from before the
    host-name rule may hold, so the dashboard must still render it as text."""
    if report.host.hostname == hostname:
        return report
    host = report.host.model_copy(update={"hostname": hostname})  # unvalidated on purpose
    return report.model_copy(update={"host": host})


class SimHost:
    def __init__(self, preset: str, hostname: str, seed: int = 1, span_s: float = 3600,
                 ago_s: float = 0, clock_behind_s: float = 0.0) -> None:
        """A host whose history spans `span_s` and ends `ago_s` before now (stale if > 60);
        `clock_behind_s`: its probe's clock runs that far behind the server's (its reports
        carry times that much older, and say so in their send time: `Store.put`)."""
        self.name = hostname
        self.span_s = span_s
        self.clock_behind_s = clock_behind_s
        self.clock = FakeClock(datetime.now(UTC) - timedelta(seconds=span_s + ago_s))
        fabric_name = hostname if HOSTNAME.fullmatch(hostname) else f"legacy-{seed}"
        self.fabric = SimulatedFabric(preset, seed=seed, clock=self.clock, hostname=fabric_name)

    def history(self, every_s: float = 600, episodes: Sequence[Episode] = (),
                tests: tuple[TestName, ...] = QUICK_TESTS) -> list[Report]:
        """Sweeps every `every_s` over `span_s` seconds, ending `ago_s` before now."""
        pending = sorted(episodes, key=lambda e: e.at_s)
        options = SweepOptions(tests=tests, timeout_s=None)
        reports = []
        while self.clock.seconds <= self.span_s:
            while pending and pending[0].at_s <= self.clock.seconds:
                self.fabric.inject(*pending.pop(0).faults)
            reports.append(_legacy_named(build_report(self.fabric, options=options,
                                                      now=self.clock.now), self.name))
            self.clock.seconds += every_s
        return reports

    def inventory_now(self) -> Report:
        """An inventory pass at the real time now (the fake clock catches up first)."""
        self.clock.seconds = (datetime.now(UTC) - self.clock.start).total_seconds() \
            - self.clock_behind_s
        return _legacy_named(build_report(self.fabric, kind=ReportKind.INVENTORY,
                                          now=self.clock.now), self.name)


class Store:
    """Reports straight into a demo server's database, alerts evaluated as after a POST."""

    def __init__(self, data_dir: Path) -> None:
        self.settings: Settings = demo_settings(DemoOptions(data_dir=data_dir))
        self.engine = make_engine(self.settings)
        self.sessions = make_sessionmaker(self.engine)
        self.alerting = AlertingService(self.sessions, self.settings, AlertingSettings())

    def put(self, reports: Iterable[Report], received_when_sent: bool = False,
            sent_when_finished: bool = False) -> None:
        """Store `reports` as received now, or (`received_when_sent`) as received when each
        was finished: the server judges staleness by when it last heard from a host.
        `sent_when_finished`: each says it was sent when it finished, by its probe's clock
        (the X-Peerwatch-Sent-At a probe sends), which the clock skew is read from."""
        hosts = set()
        for report in reports:
            received = report.finished_at if received_when_sent else datetime.now(UTC)
            sent = report.finished_at if sent_when_finished else None
            with self.sessions() as session:
                ingest(session, report, self.settings, received, sent_at=sent)
            hosts.add(report.host.hostname)
        for host in sorted(hosts):
            self.alerting.evaluate_host(host)

    def peer_round(self, hosts: Iterable[str]) -> None:
        """The server's periodic round now: the fleet's peer stats recomputed, then `hosts`
        judged against them (the demo's own round does the same within a minute)."""
        self.alerting.refresh_peers()
        for host in hosts:
            self.alerting.evaluate_host(host)

    def maintenance(self, host: str, hours: float, comment: str) -> None:
        """Declare a maintenance window for `host` from now, as the admin API would."""
        with self.sessions() as session:
            declare_window(session, MaintenanceRequest(
                host=host, duration_s=hours * 3600, comment=comment), datetime.now(UTC))

    def network(self, net: SimNetwork, pairs: Iterable[tuple[str, str]]) -> None:
        """The simulated network (probes/sim/simnet.py) fed as the demo's network story
        feeds it (app/demo/network.py): the map, then one pair job per pair in this order
        (its figure from `net`, faults included), then the network evaluation."""
        with self.sessions() as session:
            network_writes.replace_map(session, NetworkMapIn.model_validate(
                {"hosts": network_map(net)}), datetime.now(UTC))
            for a, b in pairs:
                run_pair_job(session, net, a, b, "browser test", salt=0)
            evaluate_network(session, self.settings, self.alerting.alerting, datetime.now(UTC))

    def close(self) -> None:
        self.alerting.close()
        self.engine.dispose()
