"""The network between hosts (docs/network.md): the map, judged host pairs and the faults
triangulated from them, the planner's next pairs, the pair jobs and their rendezvous, the
results of a pair job, and the topology the schedulers read.

Reads need no credential. The map takes a person's; creating and moving pair jobs a
controller's (`peerwatch pairs`: drain or admin credential); a rank joins and posts results
with its own host's probe credential, which must speak for the host it names.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, Request, status
from fastapi.responses import PlainTextResponse
from pydantic import AfterValidator

from peerwatch.app.analysis.topology_export import node_labels, slurm_topology
from peerwatch.app.api.deps import (
    AdminDep,
    ControllerDep,
    ProbeDep,
    RowId,
    SessionDep,
    SettingsDep,
    forbidden_host,
)
from peerwatch.app.api.errors import unprocessable
from peerwatch.app.api.json_body import StrictJsonRoute
from peerwatch.app.judging.network import evaluate_network
from peerwatch.app.judging.service import service_for
from peerwatch.app.queries import network as q
from peerwatch.app.queries.network_kept import kept_judgements_for
from peerwatch.app.queries.network_plan import pair_plan
from peerwatch.app.schemas.network import (
    HostPairOut,
    NetFaultOut,
    NetworkHostIn,
    NetworkMapIn,
    NetworkMapOut,
    NetworkPairsResponse,
    PairJobIn,
    PairJobOut,
    PairJobsResponse,
    PairJobUpdate,
    PairResultsIn,
    PairResultsOut,
    PlannedPairOut,
    PlanResponse,
    RankIn,
    RendezvousIn,
    RendezvousOut,
)
from peerwatch.app.services import network as writes
from peerwatch.app.store.tables.network import PairJob
from peerwatch.probes.report import TestName, utcnow, valid_hostname

router = APIRouter(prefix="/api/v1/network", tags=["network"], route_class=StrictJsonRoute)

TestQuery = Annotated[TestName | None, Query(description="Only this test (e.g. net_write)")]


def _conflict(exc: writes.JobConflict) -> HTTPException:
    return HTTPException(status.HTTP_409_CONFLICT, detail=str(exc))


@router.put("/hosts", response_model=NetworkMapOut,
            summary="Replace the network map: each host's leaf, spine, domain, NIC rate (admin)")
def put_hosts(body: NetworkMapIn, session: SessionDep, _admin: AdminDep) -> NetworkMapOut:
    try:
        writes.replace_map(session, body, utcnow())
    except writes.JobConflict as exc:
        raise unprocessable("hosts", str(exc)) from exc
    return get_hosts(session)


@router.get("/hosts", response_model=NetworkMapOut, summary="The network map")
def get_hosts(session: SessionDep) -> NetworkMapOut:
    return NetworkMapOut(hosts=[NetworkHostIn(host=h, leaf=p.leaf, spine=p.spine,
                                              domain=p.domain, line_rate_bps=p.line_rate_bps)
                                for h, p in sorted(q.places(session).items())])


@router.get("/pairs", response_model=NetworkPairsResponse,
            summary="Judged host pairs and the faults triangulated from them")
def get_pairs(request: Request, session: SessionDep, settings: SettingsDep,
              test: TestQuery = None,
              host: Annotated[str | None, Query(
                  min_length=1, max_length=253,
                  description="Only this host's pairs, faults and suspicion (a host page's "
                              "network line: judged over the whole fleet, sent for one)"),
                  AfterValidator(valid_hostname)] = None) -> NetworkPairsResponse:
    now = utcnow()
    j, places = kept_judgements_for(request.app).judgement(session, settings, now,
                                                          test.value if test else None)
    leaf = {h: p.leaf for h, p in places.items()}
    if host is not None:
        j = j.about(host)
    return NetworkPairsResponse(
        generated_at=now, test=test.value if test else None,
        pairs=[HostPairOut(host=v.host, peer_host=v.peer_host, leaf=leaf.get(v.host),
                           peer_leaf=leaf.get(v.peer_host), test=v.test,
                           measured_bps=v.measured, expected_bps=v.expected,
                           baseline_bps=v.baseline, fleet_bps=v.fleet, ratio=v.ratio,
                           verdict=v.verdict, reason=v.reason, cause=v.cause,
                           measured_at=v.at, job=v.job)
               for v in j.pairs],
        faults=[NetFaultOut(kind=f.kind, subject=f.subject, hosts=f.hosts, pairs=f.pairs,  # type: ignore[arg-type]
                            ratio=f.ratio, reason=f.reason, resolved=f.resolved)
                for f in j.faults],
        suspects=j.suspects)


@router.get("/plan", response_model=PlanResponse,
            summary="Which host pairs to test next: suspects, NVL72 trays, leaf rings, spine")
def get_plan(session: SessionDep, settings: SettingsDep,
             max_pairs: Annotated[int, Query(ge=1, le=1000)] = 16) -> PlanResponse:
    now = utcnow()
    planned, left_out = pair_plan(session, settings, now, max_pairs)
    return PlanResponse(generated_at=now,
                        pairs=[PlannedPairOut(host=p.host, peer_host=p.peer_host,
                                              reason=p.reason) for p in planned],
                        left_out=[f"{h}: {why}" for h, why in sorted(left_out.items())])


def _job_out(job: object) -> PairJobOut:
    """A pair job as anyone may read it: rank 0's NCCL id is the ranks' alone."""
    out = PairJobOut.model_validate(job, from_attributes=True)
    out.ranks = {k: ({f: v for f, v in e.items() if f != "nccl_id"} if isinstance(e, dict)
                     else e) for k, e in out.ranks.items()}
    return out


@router.post("/jobs", response_model=PairJobOut, status_code=status.HTTP_201_CREATED,
             summary="Record a pair job before submitting it (drain or admin credential)")
def post_job(body: PairJobIn, session: SessionDep, _c: ControllerDep) -> PairJobOut:
    try:
        return _job_out(writes.create_job(session, body, utcnow()))
    except writes.JobConflict as exc:
        raise unprocessable("peer_host", str(exc)) from exc


@router.patch("/jobs/{job_id}", response_model=PairJobOut,
              summary="Move a pair job: submitted (its scheduler id), failed, cancelled")
def patch_job(job_id: RowId, body: PairJobUpdate, session: SessionDep,
              _c: ControllerDep) -> PairJobOut:
    try:
        return _job_out(writes.update_job(session, job_id, body, utcnow()))
    except writes.JobConflict as exc:
        raise _conflict(exc) from exc


@router.get("/jobs", response_model=PairJobsResponse, summary="Pair jobs, newest first")
def get_jobs(session: SessionDep, state: Annotated[str | None, Query(
        pattern=r"^(planned|submitted|running|done|failed|cancelled)$")] = None
             ) -> PairJobsResponse:
    return PairJobsResponse(jobs=[_job_out(j) for j in q.pair_jobs(
        session, (state,) if state else None)])


@router.get("/jobs/{job_id}", response_model=PairJobOut, summary="One pair job")
def get_job(job_id: RowId, session: SessionDep) -> PairJobOut:
    return _job_out(q.pair_job(session, job_id))


@router.post("/jobs/{job_id}/ranks", response_model=PairJobOut,
             summary="A rank of a pair job arrives (its host's probe credential)")
def post_rank(job_id: RowId, body: RankIn, session: SessionDep, probe: ProbeDep) -> PairJobOut:
    if refused := forbidden_host(probe, body.host):
        raise refused
    try:
        return _job_out(writes.join(session, job_id, body, utcnow()))
    except writes.JobConflict as exc:
        raise _conflict(exc) from exc


@router.put("/jobs/{job_id}/rendezvous", response_model=RendezvousOut,
            summary="Rank 0 hands rank 1 its NCCL unique id (rank 0's host probe credential)")
def put_rendezvous(job_id: RowId, body: RendezvousIn, session: SessionDep,
                   probe: ProbeDep) -> RendezvousOut:
    if refused := forbidden_host(probe, body.host):
        raise refused
    try:
        job = writes.put_rendezvous(session, job_id, body, utcnow())
    except writes.JobConflict as exc:
        raise _conflict(exc) from exc
    return _rendezvous_out(job)


@router.get("/jobs/{job_id}/rendezvous", response_model=RendezvousOut,
            summary="What rank 1 waits for: rank 0's NCCL unique id (a rank's host credential)")
def get_rendezvous(job_id: RowId, session: SessionDep, probe: ProbeDep,
                   host: Annotated[str, Query(min_length=1, max_length=253,
                                              description="the asking rank's host"),
                                   AfterValidator(valid_hostname)]) -> RendezvousOut:
    if refused := forbidden_host(probe, host):
        raise refused
    job = q.pair_job(session, job_id)
    if host not in (job.host, job.peer_host):
        raise HTTPException(status.HTTP_403_FORBIDDEN,
                            detail=f"{host!r} is not a rank of pair job {job_id}")
    return _rendezvous_out(job)


def _rendezvous_out(job: PairJob) -> RendezvousOut:
    return RendezvousOut(job_id=job.id, state=job.state, reason=job.reason,
                         nccl_id=q.rendezvous_id(job))


@router.post("/results", response_model=PairResultsOut, status_code=status.HTTP_201_CREATED,
             summary="A pair job's cross-host results (rank 0's host probe credential)")
def post_results(request: Request, body: PairResultsIn, session: SessionDep,
                 settings: SettingsDep, probe: ProbeDep) -> PairResultsOut:
    if refused := forbidden_host(probe, body.host):
        raise refused
    now = utcnow()
    try:
        stored = writes.store_results(session, body, now)
    except writes.JobConflict as exc:
        raise _conflict(exc) from exc
    judgement, _ = evaluate_network(session, settings, service_for(request.app).alerting, now)
    return PairResultsOut(stored=stored, faults=len(judgement.faults))


@router.get("/topology.conf", response_class=PlainTextResponse,
            summary="Slurm topology.conf (topology/tree) from the measured, judged network")
def get_topology_conf(request: Request, session: SessionDep, settings: SettingsDep) -> str:
    j, places = kept_judgements_for(request.app).judgement(session, settings, utcnow())
    return slurm_topology(places, j)


@router.get("/node-labels", response_model=dict[str, dict[str, str]],
            summary="Kubernetes node labels from the measured, judged network")
def get_node_labels(request: Request, session: SessionDep,
                    settings: SettingsDep) -> dict[str, dict[str, str]]:
    j, places = kept_judgements_for(request.app).judgement(session, settings, utcnow())
    return node_labels(places, j)
