"""`/scheduler/hosts`: which hosts can take a job of N GPUs now, read from the stored state of
every host and GPU in two indexed selects (no judging, whatever the fleet's size)."""

from __future__ import annotations

from collections import defaultdict

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.analysis.verdict import Verdict
from app.models import Host, JudgedGpu, JudgedHost
from app.queries.health import NOT_JUDGED
from app.schemas_scheduler import SchedulableHost, UnhealthyGpu


def _candidate(host: Host, judged: JudgedHost | None, gpus: list[JudgedGpu],
               wanted: int) -> SchedulableHost | str:
    """The host as a candidate for a job of `wanted` GPUs, or why it cannot take one."""
    if judged is None:
        return f"unknown: {NOT_JUDGED}"
    if judged.stale:
        return f"stale: {judged.reason}"
    if judged.verdict == Verdict.DOWN:
        return f"down: {judged.reason}"
    good = [g.gpu for g in gpus if g.verdict == Verdict.HEALTHY]
    if len(good) < wanted:
        return f"{len(good)} healthy GPUs of {len(gpus)}, {wanted} asked for"
    return SchedulableHost(
        host=host.name, gpus_total=len(gpus), healthy_gpus=good,
        cuda_visible_devices=",".join(map(str, good)),
        unhealthy=[UnhealthyGpu(gpu=g.gpu, verdict=g.verdict, reason=g.reason)
                   for g in gpus if g.verdict != Verdict.HEALTHY],
        last_report_at=host.last_report_at,
    )


def schedulable(session: Session, wanted: int) -> tuple[list[SchedulableHost], dict[str, str]]:
    """(hosts that can take `wanted` GPUs, {every other host: why not}), by host name."""
    gpus: dict[int, list[JudgedGpu]] = defaultdict(list)
    for g in session.scalars(select(JudgedGpu).order_by(JudgedGpu.host_id, JudgedGpu.gpu)):
        gpus[g.host_id].append(g)
    hosts: list[SchedulableHost] = []
    left_out: dict[str, str] = {}
    rows = session.execute(select(Host, JudgedHost)
                           .outerjoin(JudgedHost, JudgedHost.host_id == Host.id)
                           .order_by(Host.name))
    for host, judged in rows:
        found = _candidate(host, judged, gpus.get(host.id, []), wanted)
        if isinstance(found, str):
            left_out[host.name] = found
        else:
            hosts.append(found)
    return hosts, left_out
