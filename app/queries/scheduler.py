"""`/scheduler/hosts`: which hosts can take a job of N GPUs now, read from the stored state of
every host and GPU in two indexed selects (no judging, whatever the fleet's size)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any, NamedTuple

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.analysis.verdict import Verdict
from app.models import Host, JudgedGpu, JudgedHost
from app.queries.health import NOT_JUDGED
from app.schemas_scheduler import SchedulableHost, UnhealthyGpu


class _Gpu(NamedTuple):
    gpu: int
    verdict: str
    reason: str


def _candidate(row: Any, gpus: list[_Gpu], wanted: int) -> SchedulableHost | str:
    """The host as a candidate for a job of `wanted` GPUs, or why it cannot take one."""
    if row.verdict is None:
        return f"unknown: {NOT_JUDGED}"
    if row.stale:
        return f"stale: {row.reason}"
    if row.verdict == Verdict.DOWN:
        return f"down: {row.reason}"
    good = [g.gpu for g in gpus if g.verdict == Verdict.HEALTHY]
    if len(good) < wanted:
        return f"{len(good)} healthy GPUs of {len(gpus)}, {wanted} asked for"
    return SchedulableHost(
        host=row.name, gpus_total=len(gpus), healthy_gpus=good,
        cuda_visible_devices=",".join(map(str, good)),
        unhealthy=[UnhealthyGpu(gpu=g.gpu, verdict=Verdict(g.verdict), reason=g.reason)
                   for g in gpus if g.verdict != Verdict.HEALTHY],
        last_report_at=row.last_report_at, judged_at=row.judged_at,
    )


def schedulable(session: Session, wanted: int) -> tuple[list[SchedulableHost], dict[str, str]]:
    """(hosts that can take `wanted` GPUs, {every other host: why not}), by host name.

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
    for row in rows:
        found = _candidate(row, gpus.get(row.id, []), wanted)
        if isinstance(found, str):
            left_out[row.name] = found
        else:
            hosts.append(found)
    return hosts, left_out
