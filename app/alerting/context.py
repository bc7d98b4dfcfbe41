"""What the rules look at for one host: the server's own verdicts plus a few raw facts.

`health` is the host's judged state, stored in the same transaction just before the rules
run (`app/judging/store.py`): the verdicts the API, dashboard, scheduler and
`/metrics` read. The rules add only what a verdict does not carry: the latest sweep's failed
tests, how many NVLink ports each GPU has had, and the time of the last report.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import cached_property

from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session

from peerwatch.app.alerting.listening import Listening
from peerwatch.app.alerting.settings import AlertingSettings
from peerwatch.app.analysis.fabric_health import LinkJudgement
from peerwatch.app.analysis.health import Thresholds
from peerwatch.app.analysis.xid_judge import EventFinding, judge_events
from peerwatch.app.queries.events import load_event_facts
from peerwatch.app.records.fabric import HostFabric
from peerwatch.app.records.health import HostHealth
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.tables.history import (
    Measurement,
    MeasurementKey,
    ReportRow,
    gpus_of,
)
from peerwatch.app.store.tables.inventory import Host


@dataclass(frozen=True)
class FailedTest:
    test: str
    src: int | None
    dst: int | None
    gpus: list[int]
    error: str


@dataclass
class HostContext:
    session: Session
    host: Host
    now: datetime
    settings: Settings
    alerting: AlertingSettings
    health: HostHealth  # the judged state just stored for this host
    listening: Listening | None = None  # since when this server heard probes (restarts)

    @property
    def name(self) -> str:
        return self.host.name

    @cached_property
    def thresholds(self) -> Thresholds:
        return self.settings.thresholds

    @property
    def fabric(self) -> HostFabric:
        return self.health.fabric

    @property
    def links(self) -> list[LinkJudgement]:
        """The stored verdict of every NVLink port."""
        return list(self.health.judgement.links)

    @property
    def ports_had(self) -> dict[int, int]:
        """NVLink ports per GPU: in the newest inventory or seen before (present or not),
        as the judgement counted them (`HostFabric.ports_had`, read with its fabric)."""
        return self.fabric.ports_had()

    @cached_property
    def events(self) -> list[EventFinding]:
        """The host's recent Xid/SXid events, judged with the catalog (rules_events.py): as
        the judgement just stored judged them at this `now` in this transaction, else read."""
        if self.health.events is not None and self.health.generated_at == self.now:
            return self.health.events
        return judge_events(load_event_facts(self.session, self.host.id, self.now), self.now)

    @cached_property
    def latest_sweep_failures(self) -> list[FailedTest]:
        if self.host.last_sweep_at is None:
            return []
        sweep = self.session.scalar(_LATEST_SWEEP, {"host": self.host.id,
                                                    "at": self.host.last_sweep_at})
        if sweep is None:
            return []
        rows = self.session.execute(_FAILED, {"report": sweep})
        return [FailedTest(test, src, dst, gpus_of(gpus), error or "")
                for test, src, dst, gpus, error in rows]


# the reads of `latest_sweep_failures`, built once (building a select cost more than its
# answer, on every judgement)
_LATEST_SWEEP = select(ReportRow.id).where(
    ReportRow.host_id == bindparam("host"), ReportRow.kind == "sweep",
    ReportRow.finished_at == bindparam("at")).order_by(ReportRow.id.desc()).limit(1)
_FAILED = select(MeasurementKey.test, MeasurementKey.src, MeasurementKey.dst,
                 MeasurementKey.gpus, Measurement.error).join(
    MeasurementKey, MeasurementKey.id == Measurement.key_id).where(
    Measurement.report_id == bindparam("report"), Measurement.error.is_not(None)
).order_by(MeasurementKey.test, MeasurementKey.src, MeasurementKey.dst)


def load_context(session: Session, host: Host, now: datetime, settings: Settings,
                 alerting: AlertingSettings, health: HostHealth,
                 listening: Listening | None = None) -> HostContext:
    return HostContext(session, host, now, settings, alerting, health, listening)
