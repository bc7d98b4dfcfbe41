"""The hosts list and one host's inventory."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from peerwatch.app.analysis.rdma import judge_rdma
from peerwatch.app.analysis.verdict import Verdict
from peerwatch.app.queries.busy import busy_fields
from peerwatch.app.queries.common import get_host
from peerwatch.app.queries.fabric import load_fabric
from peerwatch.app.queries.health import NOT_JUDGED
from peerwatch.app.queries.nics import nic_inventory
from peerwatch.app.schemas.common import PairRef
from peerwatch.app.schemas.gpu_evidence import GpuClocksOut, RdmaReadinessOut
from peerwatch.app.schemas.hosts import (
    GpuActivityOut,
    GpuOut,
    HostDetail,
    HostSummary,
    NvLinkOut,
    PairOut,
    ProbeErrorOut,
    ReportOut,
)
from peerwatch.app.schemas.nics import NicOut
from peerwatch.app.store.clocks_row import clocks_of
from peerwatch.app.store.tables.alerts import Alert
from peerwatch.app.store.tables.history import GpuSample, ReportRow
from peerwatch.app.store.tables.inventory import Host, HostRuntime
from peerwatch.app.store.tables.judged import (
    JudgedGpu,
    JudgedHost,
    JudgedLink,
    JudgedPair,
    JudgedTest,
)
from peerwatch.probes.clocks import GpuClocks
from peerwatch.probes.gpu_health import ImexStatus
from peerwatch.probes.report import LinkState, TestName

FIRING = "firing"


def firing_alert_counts(session: Session) -> dict[str, int]:
    """Firing alerts per host label (rows written by the alerting engine)."""
    rows = session.execute(
        select(Alert.host, func.count()).where(Alert.state == FIRING, Alert.host.is_not(None))
        .group_by(Alert.host))
    return {str(host): n for host, n in rows}


def _summary(host: Host, judged: JudgedHost | None, alerts_firing: int) -> HostSummary:
    if judged is None:
        return HostSummary(host=host.name, fabric=host.fabric, verdict=Verdict.UNKNOWN,
                           reason=f"{host.name}: {NOT_JUDGED}", gpus_total=0, gpus_healthy=0,
                           last_report_at=host.last_report_at,
                           last_received_at=host.last_received_at,
                           last_sweep_at=host.last_sweep_at, stale=True,
                           alerts_firing=alerts_firing, clock_skew_s=host.clock_skew_s,
                           **busy_fields(host, None))
    worst = None
    if judged.worst_test is not None and judged.worst_ratio is not None:
        assert judged.worst_src is not None and judged.worst_dst is not None
        worst = PairRef(src=judged.worst_src, dst=judged.worst_dst,
                        test=TestName(judged.worst_test), ratio=judged.worst_ratio)
    return HostSummary(
        host=host.name, fabric=host.fabric, verdict=Verdict(judged.verdict),
        reason=judged.reason, since=judged.since, gpus_total=judged.gpus_total,
        gpus_healthy=judged.gpus_healthy, worst_pair=worst, last_report_at=host.last_report_at,
        last_received_at=host.last_received_at, last_sweep_at=host.last_sweep_at,
        stale=judged.stale, alerts_firing=alerts_firing, clock_skew_s=host.clock_skew_s,
        **busy_fields(host, judged.judged_at),
    )


def host_summaries(session: Session) -> list[HostSummary]:
    """One summary per known host, by name, as last judged: verdict, healthy GPUs, worst
    pair, staleness. Two indexed selects, whatever the fleet's history holds."""
    alerts = firing_alert_counts(session)
    rows = session.execute(select(Host, JudgedHost)
                           .outerjoin(JudgedHost, JudgedHost.host_id == Host.id)
                           .order_by(Host.name))
    return [_summary(h, j, alerts.get(h.name, 0)) for h, j in rows]


def _latest_samples(session: Session, host_id: int) -> dict[int, GpuSample]:
    newest = select(func.max(GpuSample.at)).where(GpuSample.host_id == host_id)
    rows = session.scalars(select(GpuSample).where(GpuSample.host_id == host_id,
                                                   GpuSample.at == newest.scalar_subquery()))
    return {r.gpu: r for r in rows}


def _activity(r: GpuSample | None) -> GpuActivityOut | None:
    if r is None:
        return None
    return GpuActivityOut(at=r.at, utilization_pct=r.utilization_pct,
                          memory_used_bytes=r.memory_used_bytes,
                          compute_processes=r.compute_processes or 0)


def _clocks(r: GpuSample | None) -> GpuClocksOut | None:
    """The sample's clocks (migration 0017), None where its probe sent none."""
    if r is None or r.clocks is None:
        return None
    try:
        c = GpuClocks(gpu=r.gpu, reasons=r.clock_reasons, **(clocks_of(r.clocks) or {}))
    except ValueError:
        return None  # written by another version of the schema: not shown, not a 500
    return GpuClocksOut.of(r.at, c, r.throttle.split(",") if r.throttle else [])


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


def changed_at(session: Session, host: Host) -> datetime | None:
    """When anything the host's judged answers (health, topology, matrix, pair series) show
    last changed: judged rows are rewritten only when they change (app/judging/write.py), so
    their newest `judged_at`, with the host verdict's `since` and the host's inventory, sweep
    and refusal times, moves exactly when one of those answers may have. A few indexed
    selects: what lets a polling page skip four heavier reads."""
    newest = [host.inventory_changed_at, host.last_sweep_at, host.last_refused_at,
              session.scalar(select(JudgedHost.since).where(JudgedHost.host_id == host.id))]
    for model in (JudgedGpu, JudgedLink, JudgedPair, JudgedTest):
        newest.append(session.scalar(select(func.max(model.judged_at))
                                     .where(model.host_id == host.id)))
    known = [t for t in newest if t is not None]
    return max(known) if newest[3] is not None and known else None


def host_detail(session: Session, name: str) -> HostDetail:
    """The inventory of one host as last reported, with each GPU's latest activity."""
    host = get_host(session, name)
    fabric = load_fabric(session, host)
    samples = _latest_samples(session, host.id)
    gpus = [GpuOut(**g.model_dump(exclude={"pcie", "rdma", "switch_fabric", "driver"}),
                   pcie=g.pcie, rdma=g.rdma, switch_fabric=g.switch_fabric, driver=g.driver,
                   nvlinks_up=sum(1 for p in fabric.links_of(i) if p.state is LinkState.UP),
                   activity=_activity(samples.get(i)), clocks=_clocks(samples.get(i)),
                   rdma_readiness=RdmaReadinessOut.of(judge_rdma(i, g.rdma)))
            for i, g in sorted(fabric.gpus.items())]
    judged_stale = session.scalar(select(JudgedHost.stale).where(JudgedHost.host_id == host.id))
    stale = True if judged_stale is None else judged_stale
    return HostDetail(
        host=host.name, fabric=host.fabric, driver_version=host.driver_version,
        cuda_version=host.cuda_version, probe_version=host.probe_version,
        first_seen=host.first_seen, last_report_at=host.last_report_at,
        last_received_at=host.last_received_at, clock_skew_s=host.clock_skew_s, stale=stale,
        changed_at=changed_at(session, host), gpus=gpus,
        nvlinks=[NvLinkOut(**p.model_dump(exclude={"capabilities"})) for p in fabric.nvlinks],
        pairs=[PairOut(**p.model_dump()) for _, p in sorted(fabric.pairs.items())],
        last_sweep=_last_sweep(session, host.id),
        imex=_imex(session, host.id),
        nics=_nics(session, host.id),
    )


def _nics(session: Session, host_id: int) -> list[NicOut]:
    """Each NIC of the newest report with its ports as last judged (the host's facts)."""
    facts = session.scalar(select(JudgedHost.facts).where(JudgedHost.host_id == host_id))
    judged = (facts or {}).get("nics") or []
    return [NicOut.of(device, judged) for device in nic_inventory(session, host_id)]


def _imex(session: Session, host_id: int) -> ImexStatus | None:
    row = session.get(HostRuntime, host_id)
    return None if row is None or row.imex is None else ImexStatus.model_validate(row.imex)
