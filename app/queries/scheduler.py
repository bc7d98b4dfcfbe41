"""`/scheduler/hosts`: which hosts can take a job of N GPUs now, read from the stored state of
every host and GPU in two indexed selects (no judging, whatever the fleet's size)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any, NamedTuple

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.analysis.rdma import judge_rdma
from app.analysis.verdict import Verdict
from app.models import Gpu, Host, JudgedGpu, JudgedHost
from app.queries.health import NOT_JUDGED
from app.schemas_scheduler import GpuRdma, SchedulableHost, UnhealthyGpu
from probes.report import RdmaInfo


class _Gpu(NamedTuple):
    gpu: int
    verdict: str
    reason: str


def _rdma_of(session: Session) -> dict[int, list[GpuRdma]]:
    """Host id -> each present GPU's RDMA readiness, judged from the stored inventory."""
    out: dict[int, list[GpuRdma]] = defaultdict(list)
    for host_id, index, rdma in session.execute(
            select(Gpu.host_id, Gpu.index, Gpu.rdma).where(Gpu.present.is_(True))
            .order_by(Gpu.host_id, Gpu.index)):
        try:
            v = judge_rdma(index, RdmaInfo(**rdma))
        except ValueError:
            continue  # a row of another schema version: no field rather than a 500
        out[host_id].append(GpuRdma(gpu=index, readiness=v.readiness.value, reason=v.reason))
    return out


def _candidate(row: Any, gpus: list[_Gpu], wanted: int, rdma: list[GpuRdma] | None = None,
               only_ready: bool = False) -> SchedulableHost | str:
    """The host as a candidate for a job of `wanted` GPUs, or why it cannot take one;
    `only_ready`: only RDMA-ready GPUs count (the caller asked for `rdma_ready`)."""
    if row.verdict is None:
        return f"unknown: {NOT_JUDGED}"
    if row.stale:
        return f"stale: {row.reason}"
    if row.verdict == Verdict.DOWN:
        return f"down: {row.reason}"
    good = [g.gpu for g in gpus if g.verdict == Verdict.HEALTHY]
    if only_ready:
        ready = {r.gpu for r in rdma or [] if r.readiness == "ready"}
        good = [g for g in good if g in ready]
        if len(good) < wanted:
            return (f"{len(good)} healthy GPUs ready for GPUDirect RDMA of {len(gpus)}, "
                    f"{wanted} asked for")
    if len(good) < wanted:
        return f"{len(good)} healthy GPUs of {len(gpus)}, {wanted} asked for"
    return SchedulableHost(
        host=row.name, gpus_total=len(gpus), healthy_gpus=good,
        cuda_visible_devices=",".join(map(str, good)),
        unhealthy=[UnhealthyGpu(gpu=g.gpu, verdict=Verdict(g.verdict), reason=g.reason)
                   for g in gpus if g.verdict != Verdict.HEALTHY],
        last_report_at=row.last_report_at, judged_at=row.judged_at, rdma=rdma or [],
    )


def schedulable(session: Session, wanted: int, rdma_ready: bool = False
                ) -> tuple[list[SchedulableHost], dict[str, str]]:
    """(hosts that can take `wanted` GPUs, {every other host: why not}), by host name, each
    with its GPUs' RDMA readiness (`rdma_ready`: only ready GPUs count as usable).

    Plain columns, not ORM objects: at 1350 hosts (7200 GPUs) loading every judged GPU's
    row with its facts was most of the answer's time (bench/domains.py's reference)."""
    gpus: dict[int, list[_Gpu]] = defaultdict(list)
    for host_id, gpu, verdict, reason in session.execute(
            select(JudgedGpu.host_id, JudgedGpu.gpu, JudgedGpu.verdict, JudgedGpu.reason)
            .order_by(JudgedGpu.host_id, JudgedGpu.gpu)):
        gpus[host_id].append(_Gpu(gpu, verdict, reason))
    hosts: list[SchedulableHost] = []
    left_out: dict[str, str] = {}
    rows = session.execute(select(Host.id, Host.name, Host.last_report_at, JudgedHost.verdict,
                                  JudgedHost.stale, JudgedHost.reason, JudgedHost.judged_at)
                           .outerjoin(JudgedHost, JudgedHost.host_id == Host.id)
                           .order_by(Host.name))
    rdma = _rdma_of(session)
    for row in rows:
        found = _candidate(row, gpus.get(row.id, []), wanted, rdma.get(row.id, []),
                           rdma_ready)
        if isinstance(found, str):
            left_out[row.name] = found
        else:
            hosts.append(found)
    return hosts, left_out
