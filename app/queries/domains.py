"""NVLink domains as stored: every GPU's fabric registration (`gpus.switch_fabric`) grouped
by domain (`gpus.nvlink_domain`, the cluster UUID written with the inventory) and clique,
with the judged verdicts of its GPU and host.

Read-time roll-up (bench/domains.py times it): one select joining `gpus` (by its indexed
domain column), `hosts`, `judged_gpus` and `judged_hosts`; no history and no judging, so a
read grows with the GPUs in domains (one domain's for `/domains/{id}`), never with the
history. The verdicts it counts were judged at ingest (`app/judging/store.py`);
`app/analysis/domains.py` only rolls them up.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import and_, select
from sqlalchemy.orm import Session

from peerwatch.app.analysis.clique_fit import CliqueFit, CliqueMiss, fit_cliques
from peerwatch.app.analysis.domains import DomainRollup, MemberGpu, Tray, domain_key, roll_up
from peerwatch.app.analysis.verdict import Verdict
from peerwatch.app.queries.common import NotFound
from peerwatch.app.queries.health import NOT_JUDGED
from peerwatch.app.queries.scheduler import apart_of
from peerwatch.app.schemas.domains import (
    CliqueFitOut,
    CliqueMissOut,
    CliqueOut,
    DomainDetail,
    DomainGpuOut,
    DomainSummary,
    TrayOut,
    TrayPickOut,
)
from peerwatch.app.store.tables.inventory import Gpu, Host
from peerwatch.app.store.tables.judged import JudgedGpu, JudgedHost


def _member(host: str, gpu: int, fabric: dict[str, Any], verdict: str | None,
            reason: str | None) -> MemberGpu:
    return MemberGpu(host, gpu, fabric.get("clique_id"), fabric.get("state"),
                     fabric.get("status"), fabric.get("health"),
                     tuple(fabric.get("health_issues") or ()),
                     Verdict(verdict) if verdict else Verdict.UNKNOWN,
                     reason or f"GPU{gpu}: {NOT_JUDGED}")


@dataclass
class _TrayRows:
    verdict: Verdict
    reason: str
    stale: bool
    gpus: list[MemberGpu] = field(default_factory=list)


def _members(session: Session, only: str | None) -> dict[str, dict[str, _TrayRows]]:
    """domain id -> host name -> its judged state and GPUs in that domain, in one select."""
    where = Gpu.nvlink_domain.is_not(None) if only is None else Gpu.nvlink_domain == only
    rows = session.execute(
        select(Gpu.nvlink_domain, Host.name, Gpu.index, Gpu.switch_fabric, JudgedGpu.verdict,
               JudgedGpu.reason, JudgedHost.verdict, JudgedHost.reason, JudgedHost.stale)
        .join(Host, Host.id == Gpu.host_id)
        .outerjoin(JudgedGpu, and_(JudgedGpu.host_id == Gpu.host_id, JudgedGpu.gpu == Gpu.index))
        .outerjoin(JudgedHost, JudgedHost.host_id == Gpu.host_id)
        .where(where).order_by(Gpu.nvlink_domain, Host.name, Gpu.index))
    out: dict[str, dict[str, _TrayRows]] = defaultdict(dict)
    for domain, name, index, fabric, verdict, reason, h_verdict, h_reason, stale in rows:
        tray = out[domain].get(name)
        if tray is None:
            tray = out[domain][name] = _TrayRows(
                Verdict(h_verdict) if h_verdict else Verdict.UNKNOWN,
                h_reason or f"{name}: {NOT_JUDGED}", True if stale is None else stale)
        tray.gpus.append(_member(name, index, fabric or {}, verdict, reason))
    return out


def _rollups(session: Session, only: str | None = None) -> list[DomainRollup]:
    apart = apart_of(session, by_name=True)  # pair faults: one end of each per job
    return [roll_up(domain, [Tray(name, t.verdict, t.reason, t.stale, tuple(t.gpus),
                                  tuple(apart.get(name, ())))
                             for name, t in hosts.items()])
            for domain, hosts in sorted(_members(session, only).items())]


def _summary_fields(r: DomainRollup) -> dict[str, Any]:
    best = r.largest_healthy
    return dict(
        id=r.domain, verdict=r.verdict, reason=r.reason, hosts=[t.host for t in r.trays],
        tray_count=len(r.trays), gpu_count=r.gpus, fabric_states=r.states,
        fabric_health=r.health,
        cliques=[CliqueOut(clique_id=c.clique_id, hosts=list(c.hosts), gpus=c.gpus,
                           healthy_gpus=c.healthy_gpus, job_span=list(c.job_span))
                 for c in r.cliques],
        largest_healthy_clique=best.clique_id if best else None,
        job_span=list(best.job_span) if best else [])


def domain_summaries(session: Session) -> list[DomainSummary]:
    return [DomainSummary(**_summary_fields(r)) for r in _rollups(session)]


def _tray_out(t: Tray) -> TrayOut:
    return TrayOut(host=t.host, verdict=t.verdict, reason=t.reason, stale=t.stale, gpus=[
        DomainGpuOut(gpu=g.gpu, clique_id=g.clique_id, state=g.state, status=g.status,
                     health=g.health, health_issues=list(g.health_issues), verdict=g.verdict,
                     reason=g.reason) for g in t.gpus])


def domain_detail(session: Session, domain: str) -> DomainDetail:
    """One domain's trays x GPUs; `NotFound` naming `domain` when no GPU reports it."""
    key = domain_key(domain)
    found = _rollups(session, key) if key is not None else []
    if not found:
        raise NotFound("NVLink domain", domain)
    r = found[0]
    return DomainDetail(**_summary_fields(r), trays=[_tray_out(t) for t in r.trays])


def _fit_out(f: CliqueFit) -> CliqueFitOut:
    return CliqueFitOut(domain=f.domain, clique_id=f.clique_id, healthy_gpus=f.healthy_gpus,
                        hosts=[TrayPickOut(host=p.host, gpus=list(p.gpus),
                                           cuda_visible_devices=",".join(map(str, p.gpus)))
                               for p in f.picks])


def clique_fits(session: Session, wanted: int) -> tuple[list[CliqueFitOut], list[CliqueMissOut]]:
    """Cliques that can host `wanted` healthy GPUs (fewest hosts first) and the others."""
    fits, misses = fit_cliques(_rollups(session), wanted)
    return [_fit_out(f) for f in fits], [_miss_out(m) for m in misses]


def _miss_out(m: CliqueMiss) -> CliqueMissOut:
    return CliqueMissOut(domain=m.domain, clique_id=m.clique_id, reason=m.reason)
