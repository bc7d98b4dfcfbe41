"""What `peerwatch drain` decides from, read in a few selects whatever the fleet's size:
each host's stored host and GPU verdicts, its firing alerts, active maintenance window and
newest start; peerwatch's own marks; the breaker and its recent take-outs; the action log."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from peerwatch.app.analysis import drain_actions
from peerwatch.app.queries.drain_evidence import HostEvidence, host_evidence
from peerwatch.app.queries.page_holds import _on_server_clock, windows_of
from peerwatch.app.schemas.drain import (
    ActionOut,
    AlertFactOut,
    BreakerOut,
    DrainNodeOut,
    GpuFactOut,
    MarkOut,
)
from peerwatch.app.store.tables.alerts import Alert
from peerwatch.app.store.tables.drain import DrainAction, DrainBreaker, DrainMark
from peerwatch.app.store.tables.inventory import Gpu, Host, HostRuntime
from peerwatch.app.store.tables.judged import JudgedGpu, JudgedHost


def _gpus(session: Session) -> dict[int, list[GpuFactOut]]:
    out: dict[int, list[GpuFactOut]] = defaultdict(list)
    for host_id, gpu, verdict, reason, since in session.execute(
            select(JudgedGpu.host_id, JudgedGpu.gpu, JudgedGpu.verdict, JudgedGpu.reason,
                   JudgedGpu.since).order_by(JudgedGpu.host_id, JudgedGpu.gpu)):
        action = drain_actions.for_reason(reason) if verdict in ("down", "degraded") else ""
        out[host_id].append(GpuFactOut(gpu=gpu, verdict=verdict, reason=reason, since=since,
                                       action=action))
    return out


def _alerts(session: Session) -> dict[str, list[AlertFactOut]]:
    out: dict[str, list[AlertFactOut]] = defaultdict(list)
    for a in session.scalars(select(Alert).where(Alert.state == "firing",
                                                 Alert.host.is_not(None)).order_by(Alert.id)):
        gpu = str(a.labels.get("gpu", ""))
        summary = str(a.annotations.get("summary", a.rule))
        out[str(a.host)].append(AlertFactOut(
            name=a.rule, summary=summary, since=a.fired_at or a.active_since,
            gpu=int(gpu) if gpu.isdigit() else None,
            action=drain_actions.for_alert(a.rule, summary)))
    return out


def _started(session: Session) -> dict[int, datetime | None]:
    """Newest probe start or driver load per host, on the server's clock."""
    out = {}
    for host_id, skew, probe, driver in session.execute(
            select(HostRuntime.host_id, Host.clock_skew_s, HostRuntime.probe_started_at,
                   HostRuntime.driver_loaded_at).join(Host, Host.id == HostRuntime.host_id)):
        times = [t for t in (_on_server_clock(probe, skew), _on_server_clock(driver, skew)) if t]
        out[host_id] = max(times) if times else None
    return out


def _cliques(session: Session) -> dict[int, tuple[str, int | None]]:
    """(NVLink domain, clique id) of each host in one (rack-scale systems only)."""
    out: dict[int, tuple[str, int | None]] = {}
    for host_id, domain, fabric in session.execute(
            select(Gpu.host_id, Gpu.nvlink_domain, Gpu.switch_fabric).where(
                Gpu.present.is_(True), Gpu.nvlink_domain.is_not(None)).order_by(Gpu.index)):
        clique = (fabric or {}).get("clique_id")
        out.setdefault(host_id, (str(domain), clique if isinstance(clique, int) else None))
    return out


def drain_nodes(session: Session, now: datetime) -> list[DrainNodeOut]:
    gpus, alerts, started = _gpus(session), _alerts(session), _started(session)
    cliques, evidence = _cliques(session), host_evidence(session)
    windows = windows_of(session, None, now)
    rows = session.execute(
        select(Host.id, Host.name, JudgedHost.verdict, JudgedHost.reason, JudgedHost.since,
               JudgedHost.stale, JudgedHost.gpus_total)
        .outerjoin(JudgedHost, JudgedHost.host_id == Host.id).order_by(Host.name))
    out = []
    for r in rows:
        active = [w.ends_at for w in windows.get(r.name, []) if w.starts_at <= now]
        out.append(DrainNodeOut(
            host=r.name, verdict=r.verdict, reason=r.reason or "not judged yet", since=r.since,
            stale=bool(r.stale), gpus_total=r.gpus_total or 0, gpus=gpus.get(r.id, []),
            alerts=alerts.get(r.name, []), maintenance_until=max(active) if active else None,
            started_at=started.get(r.id), nvlink_domain=cliques.get(r.id, (None, None))[0],
            nvlink_clique=cliques.get(r.id, (None, None))[1],
            action=drain_actions.for_host(r.reason or "") if r.verdict == "down" else "",
            gpu_counts=evidence.get(r.id, HostEvidence()).counts,
            full_sweep_at=evidence.get(r.id, HostEvidence()).full_sweep_at))
    return out


def mark_text(m: DrainMark) -> str:
    what = "taken out by peerwatch" if m.applied else "would be taken out (observe mode)"
    return f"{what} {m.taken_out_at:%Y-%m-%d %H:%M} UTC: {m.reason}"


def mark_out(m: DrainMark, kind: str | None = None) -> MarkOut:
    return MarkOut(host=m.host, scheduler=m.scheduler, taken_out_at=m.taken_out_at,
                   reason=m.reason, applied=m.applied, clear_since=m.clear_since,
                   text=mark_text(m), adopted=kind == "adopt")


def marks(session: Session, scheduler: str | None = None, host: str | None = None
          ) -> list[MarkOut]:
    """With the kind of the action that made each mark (an adoption proves less)."""
    query = (select(DrainMark, DrainAction.kind)
             .outerjoin(DrainAction, DrainAction.id == DrainMark.action_id)
             .order_by(DrainMark.host, DrainMark.scheduler))
    if scheduler is not None:
        query = query.where(DrainMark.scheduler == scheduler)
    if host is not None:
        query = query.where(DrainMark.host == host)
    return [mark_out(m, kind) for m, kind in session.execute(query)]


def take_outs_since(session: Session, scheduler: str, mode: str, since: datetime) -> int:
    return int(session.scalar(select(func.count()).select_from(DrainAction).where(
        DrainAction.scheduler == scheduler, DrainAction.kind == "take_out",
        DrainAction.mode == mode, DrainAction.at >= since)) or 0)


def breaker(session: Session, scheduler: str, mode: str, window_s: float,
            now: datetime) -> BreakerOut:
    row = session.get(DrainBreaker, scheduler)
    recent = take_outs_since(session, scheduler, mode, now - timedelta(seconds=window_s))
    if row is None:
        return BreakerOut(scheduler=scheduler, open=False, mode=None, opened_at=None, reason="",
                          reset_by=None, reset_at=None, taken_out_in_window=recent,
                          window_s=window_s, known=False)
    return BreakerOut(scheduler=scheduler, open=row.open, mode=row.mode,
                      opened_at=row.opened_at, reason=row.reason, reset_by=row.reset_by,
                      reset_at=row.reset_at, taken_out_in_window=recent, window_s=window_s,
                      cause=row.cause if row.open else None, known=True)


def action_out(a: DrainAction) -> ActionOut:
    return ActionOut(id=a.id, at=a.at, host=a.host, scheduler=a.scheduler, kind=a.kind,  # type: ignore[arg-type]
                     mode=a.mode, reason=a.reason, actor=a.actor, details=a.details)  # type: ignore[arg-type]


def actions(session: Session, host: str | None, scheduler: str | None, since: datetime | None,
            limit: int) -> list[ActionOut]:
    """Newest first."""
    query = select(DrainAction).order_by(DrainAction.at.desc(), DrainAction.id.desc())
    if host is not None:
        query = query.where(DrainAction.host == host)
    if scheduler is not None:
        query = query.where(DrainAction.scheduler == scheduler)
    if since is not None:
        query = query.where(DrainAction.at >= since)
    return [action_out(a) for a in session.scalars(query.limit(limit))]
