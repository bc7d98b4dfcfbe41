"""The hosts list and one host's inventory."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.config import Settings
from app.models import Alert, GpuSample, Host, ReportRow
from app.queries.common import get_host
from app.queries.health import HostHealth, host_health
from app.schemas import (
    GpuActivityOut,
    GpuOut,
    HostDetail,
    HostSummary,
    NvLinkOut,
    PairOut,
    PairRef,
    ProbeErrorOut,
    ReportOut,
    Verdict,
)
from app.services.fabric_state import load_fabric
from probes.report import LinkState, utcnow

FIRING = "firing"


def firing_alert_counts(session: Session) -> dict[str, int]:
    """Firing alerts per host label (rows written by the alerting engine)."""
    rows = session.execute(
        select(Alert.host, func.count()).where(Alert.state == FIRING, Alert.host.is_not(None))
        .group_by(Alert.host))
    return {str(host): n for host, n in rows}


def summarize(health: HostHealth, alerts_firing: int = 0) -> HostSummary:
    j, host = health.judgement, health.host
    ratios = [(t.ratio_expected, t) for t in health.tests.values()
              if t.ratio_expected is not None]
    worst = min(ratios, key=lambda r: r[0], default=None)
    return HostSummary(
        host=host.name, fabric=host.fabric, verdict=j.verdict, reason=j.reason,
        gpus_total=len(j.gpus),
        gpus_healthy=sum(1 for g in j.gpus if g.verdict is Verdict.HEALTHY),
        worst_pair=PairRef(src=worst[1].src, dst=worst[1].dst, test=worst[1].test,
                           ratio=round(worst[0], 4)) if worst else None,
        last_report_at=host.last_report_at, last_sweep_at=host.last_sweep_at,
        stale=health.stale, alerts_firing=alerts_firing,
    )


def host_summaries(session: Session, settings: Settings,
                   now: datetime | None = None) -> list[HostSummary]:
    """One summary per known host, by name: verdict, healthy GPUs, worst pair, staleness."""
    now = now or utcnow()
    alerts = firing_alert_counts(session)
    hosts = session.scalars(select(Host).order_by(Host.name))
    return [summarize(host_health(session, settings, h, now), alerts.get(h.name, 0))
            for h in hosts]


def _latest_activity(session: Session, host_id: int) -> dict[int, GpuActivityOut]:
    newest = select(func.max(GpuSample.at)).where(GpuSample.host_id == host_id)
    rows = session.scalars(select(GpuSample).where(GpuSample.host_id == host_id,
                                                   GpuSample.at == newest.scalar_subquery()))
    return {r.gpu: GpuActivityOut(at=r.at, utilization_pct=r.utilization_pct,
                                  memory_used_bytes=r.memory_used_bytes,
                                  compute_processes=r.compute_processes or 0) for r in rows}


def _last_sweep(session: Session, host_id: int) -> ReportOut | None:
    row = session.scalars(select(ReportRow).where(ReportRow.host_id == host_id,
                                                  ReportRow.kind == "sweep")
                          .order_by(ReportRow.finished_at.desc()).limit(1)).first()
    if row is None:
        return None
    return ReportOut(
        report_id=row.report_id, kind=row.kind, started_at=row.started_at,
        finished_at=row.finished_at, received_at=row.received_at, gpu_time_s=row.gpu_time_s,
        wall_time_s=row.wall_time_s, device_memory_bytes_max=row.device_memory_bytes_max,
        skipped_gpus={int(s["gpu"]): s["reason"] for s in row.skipped},
        errors=[ProbeErrorOut(**e) for e in row.errors])


def host_detail(session: Session, settings: Settings, name: str,
                now: datetime | None = None) -> HostDetail:
    """The inventory of one host as last reported, with each GPU's latest activity."""
    host = get_host(session, name)
    fabric = load_fabric(session, host)
    now = now or utcnow()
    activity = _latest_activity(session, host.id)
    gpus = [GpuOut(**g.model_dump(exclude={"pcie", "rdma", "switch_fabric"}), pcie=g.pcie,
                   rdma=g.rdma, switch_fabric=g.switch_fabric,
                   nvlinks_up=sum(1 for p in fabric.links_of(i) if p.state is LinkState.UP),
                   activity=activity.get(i))
            for i, g in sorted(fabric.gpus.items())]
    stale = host.last_report_at is None or \
        (now - host.last_report_at).total_seconds() > settings.stale_after_s
    return HostDetail(
        host=host.name, fabric=host.fabric, driver_version=host.driver_version,
        cuda_version=host.cuda_version, probe_version=host.probe_version,
        first_seen=host.first_seen, last_report_at=host.last_report_at, stale=stale, gpus=gpus,
        nvlinks=[NvLinkOut(**p.model_dump(exclude={"capabilities"})) for p in fabric.nvlinks],
        pairs=[PairOut(**p.model_dump()) for _, p in sorted(fabric.pairs.items())],
        last_sweep=_last_sweep(session, host.id),
    )
