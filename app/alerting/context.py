"""What the rules look at for one host: the server's own verdicts plus a few raw facts.

`health` is `app.queries.host_health` — the same judgement the API and dashboard show (pair
sustain rule, contention ignored, counter rates across resets), computed at the evaluation's
`now`. Reading every pair's recent samples is most of its cost, and only a sweep changes
them, so the NVLink verdicts the other rules need are also available alone (`links`, from the
server's own `link_rates` and `judge_link`, over the same window as `host_health`). The rules
add only what a verdict does not carry: the latest sweep's failed tests, how many NVLink
ports each GPU has had, and the time of the last report.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cached_property

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.alerting.settings import AlertingSettings
from app.analysis.fabric_expect import unused_by_design
from app.analysis.fabric_health import LinkJudgement, judge_link
from app.analysis.health import Thresholds
from app.config import Settings
from app.models import Host, Measurement, NvLink, ReportRow
from app.queries.health import HostHealth, host_health, link_rates
from app.services.fabric_state import HostFabric, load_fabric


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

    @property
    def name(self) -> str:
        return self.host.name

    @cached_property
    def thresholds(self) -> Thresholds:
        return Thresholds.from_settings(self.settings)

    @cached_property
    def health(self) -> HostHealth:
        return host_health(self.session, self.settings, self.host, self.now)

    @cached_property
    def fabric(self) -> HostFabric:
        if "health" in self.__dict__:
            return self.health.fabric
        return load_fabric(self.session, self.host)

    @cached_property
    def links(self) -> list[LinkJudgement]:
        """The server's verdict on every NVLink port, without judging the pairs."""
        if "health" in self.__dict__:
            return list(self.health.judgement.links)
        since = ((self.host.last_report_at or self.now)
                 - timedelta(seconds=self.settings.link_rate_window_s))
        rates = link_rates(self.session, self.host.id, since)
        unused = unused_by_design(self.fabric.gpus,
                                  {g: self.fabric.links_of(g) for g in self.fabric.gpus})
        return [judge_link(p, rates.get((p.gpu, p.link), {}), self.thresholds,
                           (p.gpu, p.link) in unused) for p in self.fabric.nvlinks]

    @cached_property
    def ports_had(self) -> Counter[int]:
        """NVLink ports per GPU: in the newest inventory or seen before (present or not)."""
        rows = self.session.scalars(select(NvLink.gpu).where(NvLink.host_id == self.host.id))
        return Counter(rows)

    @cached_property
    def latest_sweep_failures(self) -> list[FailedTest]:
        if self.host.last_sweep_at is None:
            return []
        sweep = self.session.scalar(
            select(ReportRow.id).where(ReportRow.host_id == self.host.id,
                                       ReportRow.kind == "sweep",
                                       ReportRow.finished_at == self.host.last_sweep_at)
            .order_by(ReportRow.id.desc()).limit(1))
        if sweep is None:
            return []
        rows = self.session.scalars(
            select(Measurement).where(Measurement.report_id == sweep,
                                      Measurement.error.is_not(None))
            .order_by(Measurement.test, Measurement.src, Measurement.dst))
        return [FailedTest(m.test, m.src, m.dst, list(m.gpus), m.error or "") for m in rows]


def load_context(session: Session, host: Host, now: datetime, settings: Settings,
                 alerting: AlertingSettings) -> HostContext:
    return HostContext(session, host, now, settings, alerting)
