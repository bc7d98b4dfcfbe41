"""A simulated host driven by a fake clock, reporting into a real (migrated) database.

`SimHost` owns a `SimulatedFabric` whose clock is the test's: `advance(s)` moves both the
fabric (error counters grow, foreign jobs send bytes) and the wall time reports carry, so a
test can walk through minutes of history in milliseconds. Reports go through the server's
real ingest service; rules are evaluated at the same fake `now`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from peerwatch.app.alerting.settings import AlertingSettings
from peerwatch.app.ingest.rows import ingest
from peerwatch.app.judging.service import AlertingService
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.tables.alerts import Alert, AlertEvent
from peerwatch.probes.agent.gpus_seen import with_expected
from peerwatch.probes.report import GPU_TESTS, Report, ReportKind, TestName
from peerwatch.probes.sim.faults import Fault
from peerwatch.probes.sim.simulated import SimulatedFabric
from peerwatch.probes.sweep import SweepOptions, build_report

# A fixed morning: tests never depend on the real clock.
START = datetime(2026, 11, 30, 8, 0, tzinfo=UTC)
QUICK = SweepOptions(tests=(TestName.CE_WRITE, TestName.CE_READ, TestName.LATENCY, *GPU_TESTS))


@dataclass
class SimHost:
    sessions: sessionmaker[Session]
    settings: Settings
    alerting: AlertingSettings = field(default_factory=lambda: AlertingSettings(
        alert_eval_interval_s=0))
    preset: str = "h200x2"
    hostname: str = "sim-a"
    options: SweepOptions = QUICK
    start: datetime = START
    t: float = 0.0
    expected_gpus: int | None = None  # the agent's PEERWATCH_PROBE_EXPECTED_GPUS

    def __post_init__(self) -> None:
        self.fabric = SimulatedFabric(self.preset, seed=7, clock=lambda: self.t,
                                      hostname=self.hostname)
        self.service = AlertingService(self.sessions, self.settings, self.alerting)

    def now(self) -> datetime:
        return self.start + timedelta(seconds=self.t)

    def advance(self, seconds: float) -> None:
        self.t += seconds

    def build(self, kind: ReportKind, now: Callable[[], datetime] | None = None) -> Report:
        """One report of the fabric, carrying the Xid/SXid events its faults logged since the
        last (what the agent's report builder adds, `probes/agent/passes.py`): a link going down
        logs Xid 74 on it, a GPU falling off the bus Xid 79 (`probes/sim/simevents.py`)."""
        report = with_expected(build_report(self.fabric, kind, self.options,
                                            now=now or self.now), self.expected_gpus)
        events = self.fabric.drain_events(report.started_at)
        return report.model_copy(update={"events": events}) if events else report

    def send(self, kind: ReportKind = ReportKind.INVENTORY) -> Report:
        report = self.build(kind)
        with self.sessions() as session:
            ingest(session, report, self.settings, self.now())
        return report

    def sweep(self) -> Report:
        return self.send(ReportKind.SWEEP)

    def inject(self, *faults: Fault) -> None:
        self.fabric.inject(*faults)

    def clear(self, *faults: Fault) -> None:
        self.fabric.clear(*faults)

    def evaluate(self) -> None:
        """Judge the host, store its state and evaluate every rule (what the ingest hook and
        the periodic round both do)."""
        self.service.evaluate_host(self.hostname, self.now())

    def step(self, seconds: float, kind: ReportKind | str = ReportKind.INVENTORY) -> None:
        """Time passes, the probe reports, the server evaluates: one turn of the loop."""
        self.advance(seconds)
        self.send(ReportKind(kind))
        self.evaluate()

    # ----------------------------------------------------------------- reading back

    def alerts(self, state: str | None = None, rule: str | None = None) -> list[Alert]:
        with self.sessions() as session:
            query = select(Alert).where(Alert.host == self.hostname).order_by(Alert.id)
            if state is not None:
                query = query.where(Alert.state == state)
            if rule is not None:
                query = query.where(Alert.rule == rule)
            return list(session.scalars(query))

    def states(self) -> dict[tuple[str, tuple[tuple[str, str], ...]], str]:
        """{(rule, identifying labels): state} of the newest row per alert instance."""
        out = {}
        for a in self.alerts():
            key = tuple(sorted((k, v) for k, v in a.labels.items()
                               if k not in ("alertname", "severity")))
            out[(a.rule, key)] = a.state
        return out

    def active(self) -> dict[str, set[tuple[tuple[str, str], ...]]]:
        """{rule: {labels}} of pending and firing alerts, for short assertions."""
        out: dict[str, set[tuple[tuple[str, str], ...]]] = {}
        for (rule, labels), state in self.states().items():
            if state in ("pending", "firing"):
                out.setdefault(rule, set()).add(labels)
        return out

    def firing(self) -> set[str]:
        return {a.rule for a in self.alerts("firing")}

    def history(self, alert_id: int) -> list[str]:
        with self.sessions() as session:
            return list(session.scalars(select(AlertEvent.state).where(
                AlertEvent.alert_id == alert_id).order_by(AlertEvent.at, AlertEvent.id)))
