"""Scheduler API: which hosts can take a job now, and which of a host's GPUs to give it.

`/scheduler/hosts` lists the hosts that are fresh, not down and have enough healthy GPUs;
`/scheduler/cliques` names the NVLink cliques (rack-scale domains) with k healthy GPUs;
`/scheduler/nodes` picks k healthy nodes by measured cross-host bandwidth (docs/network.md);
`/scheduler/placement` runs `app.analysis.placement` on one host's health verdicts and latest
measured matrix. Unknown hosts answer 404 naming the host (the `NotFound` handler in
`app.main`); `gpus` < 1 or an unknown `pattern` 422; too few healthy GPUs 409 with the numbers
(the request is fine, the host's state cannot meet it now), as are more GPUs than may share
a job where a pair fault keeps two apart (`apart`, `largest_set`). See docs/scheduler.md.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, status
from pydantic import AfterValidator

from peerwatch.app.analysis.placement import NotEnoughHealthyGpus, Pattern, PlacementError, place
from peerwatch.app.api.deps import SessionDep, SettingsDep
from peerwatch.app.api.errors import query_unprocessable
from peerwatch.app.queries import host_health
from peerwatch.app.queries.domains import clique_fits
from peerwatch.app.queries.network import places as choice_places
from peerwatch.app.queries.network_plan import node_choice
from peerwatch.app.queries.placement import placement_view
from peerwatch.app.queries.scheduler import schedulable
from peerwatch.app.schemas.domains import CliquesResponse
from peerwatch.app.schemas.network import (
    LeftOutNode,
    NodeOut,
    NodePairOut,
    NodesResponse,
    NotEnoughNodesAnswer,
)
from peerwatch.app.schemas.scheduler import (
    NotEnoughGpusAnswer,
    NotEnoughGpusDetail,
    PlacementResponse,
    SchedulerHostsResponse,
)
from peerwatch.probes.report import HOSTNAME_RULE, MAX_GPUS, utcnow, valid_hostname

router = APIRouter(prefix="/api/v1/scheduler", tags=["scheduler"])


@router.get("/hosts", response_model=SchedulerHostsResponse,
            summary="Hosts that can take a job of N GPUs now")
def schedulable_hosts(
    session: SessionDep,
    min_healthy_gpus: Annotated[int, Query(ge=1, le=1024, description="GPUs the job needs.")] = 1,
    rdma_ready: Annotated[bool, Query(description="Count only GPUs ready for GPUDirect RDMA "
                                                  "(otherwise readiness is a field only).")
                          ] = False,
) -> SchedulerHostsResponse:
    """Fresh (not stale), not down, and at least `min_healthy_gpus` healthy GPUs; every other
    host is named in `left_out` with the reason. Each host lists its GPUs' RDMA readiness."""
    hosts, left_out = schedulable(session, min_healthy_gpus, rdma_ready)
    return SchedulerHostsResponse(generated_at=utcnow(), min_healthy_gpus=min_healthy_gpus,
                                  hosts=hosts, left_out=left_out)


@router.get("/cliques", response_model=CliquesResponse,
            summary="NVLink cliques that can host k healthy GPUs, and on which trays")
def cliques(
    session: SessionDep,
    gpus: Annotated[int, Query(ge=1, le=65_536, description="Healthy GPUs the job needs "
                                                           "within one clique (k).")],
) -> CliquesResponse:
    """Rack-scale NVLink domains (GB200 NVL72): a job's GPUs must share one clique. Each
    clique with k healthy GPUs on fresh trays is listed with the trays to use (fullest
    first, so the job spans the fewest hosts); every other clique is in `left_out`."""
    fits, left_out = clique_fits(session, gpus)
    return CliquesResponse(generated_at=utcnow(), gpus=gpus, cliques=fits, left_out=left_out)


@router.get(
    "/placement", response_model=PlacementResponse,
    summary="The best k healthy GPUs of a host for a ring all-reduce or an all-to-all",
    responses={
        404: {"description": "Unknown host (named in `detail`)."},
        409: {"description": "Too few healthy GPUs, or too few that may share a job (pair "
                             "faults: `apart`); `detail` carries the numbers.",
              "model": NotEnoughGpusAnswer},
    },
)
def placement(
    session: SessionDep, settings: SettingsDep,
    host: Annotated[str, Query(min_length=1, max_length=253, examples=["gpu-node-17"],
                               description=f"Host name: {HOSTNAME_RULE}."),
                    AfterValidator(valid_hostname)],
    gpus: Annotated[int, Query(ge=1, le=MAX_GPUS, description="How many GPUs (k).")],
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
                                     total=exc.total, healthy_gpus=exc.healthy,
                                     apart=getattr(exc, "apart", []),
                                     largest_set=getattr(exc, "largest", []))
        raise HTTPException(status.HTTP_409_CONFLICT, detail=detail.model_dump()) from exc
    except PlacementError as exc:
        raise query_unprocessable(str(exc), "gpus") from exc
    warnings = list(result.warnings)
    if health.stale:
        warnings.insert(0, f"host is stale: {health.judgement.reason}")
    return PlacementResponse.model_validate(
        {**result.__dict__, "host": health.host.name, "measured_at": measured_at,
         "judged_at": health.generated_at, "warnings": warnings})


@router.get("/nodes", response_model=NodesResponse,
            summary="k healthy nodes whose measured pairwise bandwidth is best",
            responses={409: {"description": "Fewer than k healthy nodes on the network map "
                                            "(`detail` names why each other was left out).",
                             "model": NotEnoughNodesAnswer}})
def nodes(session: SessionDep, settings: SettingsDep,
          count: Annotated[int, Query(ge=1, le=4096, description="Nodes the job needs (k).")]
          ) -> NodesResponse:
    """Same NVL72 domain first, then the same leaf, then across the spine; the slowest
    measured pair among the chosen, and every other host in `left_out` with why."""
    now = utcnow()
    choice, left_out = node_choice(session, settings, now, count)
    left = [LeftOutNode(host=h, why=w) for h, w in sorted(left_out.items())]
    if choice is None:
        raise HTTPException(status.HTTP_409_CONFLICT, detail={
            "message": f"fewer than {count} healthy nodes on the network map",
            "left_out": [x.model_dump() for x in left]})
    chosen = set(choice.nodes)
    places = choice_places(session)
    return NodesResponse(
        generated_at=now, count=count,
        nodes=[NodeOut(host=h, leaf=places[h].leaf if h in places else None,
                       domain=places[h].domain if h in places else None) for h in choice.nodes],
        pairs=[NodePairOut(host=a, peer_host=b, measured_bps=m, verdict=v)
               for (a, b), (m, v) in sorted(choice.pairs.items())],
        min_pair_bps=choice.min_bps, why=choice.why,
        left_out=[x for x in left if x.host not in chosen]
        + [LeftOutNode(host=h, why="healthy, but a closer or faster set was chosen")
           for h in sorted(set(places) - chosen - set(left_out))])
