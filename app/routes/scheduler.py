"""Scheduler API: which hosts can take a job now, and which of a host's GPUs to give it.

`/scheduler/hosts` lists the hosts that are fresh, not down and have enough healthy GPUs;
`/scheduler/placement` runs `app.analysis.placement` on one host's health verdicts and latest
measured matrix. Unknown hosts answer 404 naming the host (the `NotFound` handler in
`app.main`); `gpus` < 1 or an unknown `pattern` 422; too few healthy GPUs 409 with the numbers
(the request is fine, the host's state cannot meet it now). See docs/scheduler.md.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, status
from sqlalchemy import select

from app.analysis.placement import (
    FabricView,
    GpuState,
    NotEnoughHealthyGpus,
    PairVerdict,
    Pattern,
    PlacementError,
    place,
)
from app.analysis.placement_inputs import measured_matrix, view_from_inventory
from app.deps import SessionDep, SettingsDep
from app.models import Host
from app.queries import host_health
from app.queries.health import HostHealth
from app.schemas import Verdict
from app.schemas_scheduler import (
    NotEnoughGpusDetail,
    PlacementResponse,
    SchedulableHost,
    SchedulerHostsResponse,
    UnhealthyGpu,
)
from probes.report import Inventory, utcnow

router = APIRouter(prefix="/api/v1/scheduler", tags=["scheduler"])


def placement_view(health: HostHealth) -> tuple[FabricView, datetime | None]:
    """Placement's input from one host's verdicts and stored samples, and the newest sample."""
    fabric = health.fabric
    inventory = Inventory(gpus=[fabric.gpus[i] for i in sorted(fabric.gpus)],
                          nvlinks=fabric.nvlinks, pairs=list(fabric.pairs.values()))
    measured, newest = measured_matrix(health.samples)
    gpu_verdicts = {g.gpu: (g.verdict is Verdict.HEALTHY, g.reason) for g in health.gpus}
    pairs = {(p.src, p.dst): PairVerdict(p.verdict.value, p.reason)
             for p in health.judgement.pairs}
    view = view_from_inventory(inventory, measured, gpu_verdicts, pairs)
    gone = [GpuState(g.gpu, False, g.reason) for g in health.gpus if g.gpu not in fabric.gpus]
    return replace(view, gpus=[*view.gpus, *gone]), newest


def _schedulable(health: HostHealth, wanted: int) -> SchedulableHost | str:
    """The host as a candidate for a job of `wanted` GPUs, or why it cannot take one."""
    judged = health.judgement
    if health.stale:
        return f"stale: {judged.reason}"
    if judged.verdict is Verdict.DOWN:
        return f"down: {judged.reason}"
    good = judged.healthy_gpus
    if len(good) < wanted:
        return f"{len(good)} healthy GPUs of {len(judged.gpus)}, {wanted} asked for"
    return SchedulableHost(
        host=health.host.name, gpus_total=len(judged.gpus), healthy_gpus=good,
        cuda_visible_devices=",".join(map(str, good)),
        unhealthy=[UnhealthyGpu(gpu=g.gpu, verdict=g.verdict.value, reason=g.reason)
                   for g in judged.gpus if g.verdict is not Verdict.HEALTHY],
        last_report_at=health.host.last_report_at,
    )


@router.get("/hosts", response_model=SchedulerHostsResponse,
            summary="Hosts that can take a job of N GPUs now")
def schedulable_hosts(
    session: SessionDep, settings: SettingsDep,
    min_healthy_gpus: Annotated[int, Query(ge=1, le=1024, description="GPUs the job needs.")] = 1,
) -> SchedulerHostsResponse:
    """Fresh (not stale), not down, and at least `min_healthy_gpus` healthy GPUs; every other
    host is named in `left_out` with the reason."""
    now = utcnow()
    hosts: list[SchedulableHost] = []
    left_out: dict[str, str] = {}
    for row in session.scalars(select(Host).order_by(Host.name)):
        verdict = _schedulable(host_health(session, settings, row, now), min_healthy_gpus)
        if isinstance(verdict, str):
            left_out[row.name] = verdict
        else:
            hosts.append(verdict)
    return SchedulerHostsResponse(generated_at=now, min_healthy_gpus=min_healthy_gpus,
                                  hosts=hosts, left_out=left_out)


@router.get(
    "/placement", response_model=PlacementResponse,
    summary="The best k healthy GPUs of a host for a ring all-reduce or an all-to-all",
    responses={
        404: {"description": "Unknown host (named in `detail`)."},
        409: {"description": "Too few healthy GPUs; `detail` carries the numbers.",
              "model": NotEnoughGpusDetail},
    },
)
def placement(
    session: SessionDep, settings: SettingsDep,
    host: Annotated[str, Query(description="Host name as its probe reports it.",
                               examples=["gpu-node-17"])],
    gpus: Annotated[int, Query(ge=1, le=1024, description="How many GPUs (k).")],
    pattern: Annotated[Pattern, Query(description="ring: all-reduce bus bandwidth; "
                                                  "all_to_all: per-GPU all-to-all.")]
    = Pattern.RING,
) -> PlacementResponse:
    health = host_health(session, settings, host)
    view, measured_at = placement_view(health)
    try:
        result = place(view, gpus, pattern)
    except NotEnoughHealthyGpus as exc:
        detail = NotEnoughGpusDetail(message=str(exc), host=health.host.name,
                                     requested=exc.requested, healthy=len(exc.healthy),
                                     total=exc.total, healthy_gpus=exc.healthy)
        raise HTTPException(status.HTTP_409_CONFLICT, detail=detail.model_dump()) from exc
    except PlacementError as exc:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, detail=str(exc)) from exc
    warnings = list(result.warnings)
    if health.stale:
        warnings.insert(0, f"host is stale: {health.judgement.reason}")
    return PlacementResponse.model_validate(
        {**result.__dict__, "host": health.host.name, "measured_at": measured_at,
         "warnings": warnings})
