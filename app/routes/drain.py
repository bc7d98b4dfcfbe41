"""`peerwatch drain`'s API: the state it decides from, its action log, its breaker.

Reads need no credential (like every read API). Recording an action takes a drain
controller's, a node gate's (its own node) or a person's credential; closing the breaker a
person's only. docs/drain.md, docs/security.md.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, status

from peerwatch.app.api.deps import (
    ActorDep,
    AdminDep,
    ControllerDep,
    HostQuery,
    SessionDep,
    forbidden_host,
)
from peerwatch.app.api.errors import unprocessable
from peerwatch.app.api.json_body import StrictJsonRoute
from peerwatch.app.queries import drain as q
from peerwatch.app.queries.drain_lease import lease_out
from peerwatch.app.runtime.credentials import Role
from peerwatch.app.schemas.drain import (
    ActionIn,
    ActionOut,
    ActionsResponse,
    BreakerOut,
    BreakerReset,
    DrainStateResponse,
    LeaseIn,
    LeaseOut,
    LeaseRelease,
    MarksResponse,
)
from peerwatch.app.services.drain import record_action, reset_breaker
from peerwatch.app.services.drain_lease import release_lease, take_lease

router = APIRouter(prefix="/api/v1", tags=["drain"], route_class=StrictJsonRoute)

Scheduler = Annotated[str, Query(min_length=1, max_length=32, pattern=r"^[a-z0-9_-]+$",
                                 description="slurm, kubernetes, ...")]
Mode = Annotated[str, Query(pattern=r"^(act|observe)$",
                            description="Count this mode's take-outs for the breaker.")]
BREAKER_KINDS = ("breaker_trip", "breaker_reset")
Window = Annotated[float, Query(gt=0, le=30 * 86_400, description="Breaker window, s.")]


@router.get("/drain/state", response_model=DrainStateResponse,
            summary="What peerwatch drain decides from: verdicts, alerts, marks, breaker")
def drain_state(session: SessionDep, scheduler: Scheduler = "slurm", mode: Mode = "observe",
                window_s: Window = 600.0) -> DrainStateResponse:
    now = datetime.now(UTC)
    return DrainStateResponse(generated_at=now, scheduler=scheduler,
                              nodes=q.drain_nodes(session, now),
                              marks=q.marks(session, scheduler),
                              breaker=q.breaker(session, scheduler, mode, window_s, now),
                              lease=lease_out(session, scheduler, now))


@router.post("/actions", response_model=ActionOut, status_code=status.HTTP_201_CREATED,
             summary="Record what peerwatch drain did (drain, gate or admin credential)")
def post_action(body: ActionIn, session: SessionDep, actor: ActorDep) -> ActionOut:
    """A gate credential records actions about its own node only, and never the breaker's;
    what is stored as `actor` is the credential's name."""
    if actor.role is Role.GATE:
        if body.kind in BREAKER_KINDS:
            raise HTTPException(status.HTTP_403_FORBIDDEN,
                                detail=f"{actor.name} may not record {body.kind}")
        if refused := forbidden_host(actor, body.host):
            raise refused
    body = body.model_copy(update={"actor": actor.recorded_as(body.actor)})
    try:
        return q.action_out(record_action(session, body, datetime.now(UTC)))
    except ValueError as exc:
        raise unprocessable("host", str(exc)) from exc


@router.get("/actions", response_model=ActionsResponse,
            summary="What peerwatch drain did, newest first: who, what, why")
def get_actions(
    session: SessionDep,
    host: HostQuery = None,
    scheduler: Annotated[str | None, Query(max_length=32)] = None,
    since_s: Annotated[float | None, Query(gt=0, le=366 * 86_400,
                                           description="Only the last N seconds.")] = None,
    limit: Annotated[int, Query(ge=1, le=5000)] = 500,
) -> ActionsResponse:
    since = datetime.now(UTC) - timedelta(seconds=since_s) if since_s else None
    return ActionsResponse(actions=q.actions(session, host, scheduler, since, limit))


@router.get("/drain/marks", response_model=MarksResponse,
            summary="Nodes peerwatch drain holds out of service, with since when and why")
def get_marks(
    session: SessionDep,
    host: HostQuery = None,
    scheduler: Annotated[str | None, Query(max_length=32)] = None,
) -> MarksResponse:
    """For a host page or the fleet page: each mark's `text` reads "taken out by peerwatch
    2026-12-01 03:12 UTC: GPU5 down: ..." (observe mode: "would be taken out ...")."""
    return MarksResponse(marks=q.marks(session, scheduler, host))


@router.get("/drain/breaker", response_model=BreakerOut, summary="The drain breaker's state")
def get_breaker(session: SessionDep, scheduler: Scheduler = "slurm", mode: Mode = "act",
                window_s: Window = 600.0) -> BreakerOut:
    return q.breaker(session, scheduler, mode, window_s, datetime.now(UTC))


@router.post("/drain/breaker/reset", response_model=ActionOut,
             summary="Close the drain breaker after a person looked (admin credential)")
def post_breaker_reset(body: BreakerReset, session: SessionDep,
                       admin: AdminDep) -> ActionOut:
    """Only a person (an admin credential): a drain controller's cannot close what bounds
    it. Recorded under the credential's name."""
    body = body.model_copy(update={"by": admin.recorded_as(body.by)})
    return q.action_out(reset_breaker(session, body, datetime.now(UTC)))


@router.get("/drain/lease", response_model=LeaseOut,
            summary="Which controller acts for the scheduler now (none: no live lease)")
def get_lease(session: SessionDep, scheduler: Scheduler = "slurm") -> LeaseOut:
    return lease_out(session, scheduler, datetime.now(UTC))


@router.post("/drain/lease", response_model=LeaseOut,
             summary="Take or renew the scheduler's drain lease (drain or admin credential)")
def post_lease(body: LeaseIn, session: SessionDep, _holder: ControllerDep) -> LeaseOut:
    """One controller acts per scheduler: the answer's `held` says whether the asker does;
    if not, `holder` and `expires_at` say who does and until when (it observes meanwhile)."""
    return take_lease(session, body, datetime.now(UTC))


@router.post("/drain/lease/release", response_model=LeaseOut,
             summary="Give the drain lease back (a controller that stops; drain or admin "
                     "credential)")
def post_lease_release(body: LeaseRelease, session: SessionDep,
                       _holder: ControllerDep) -> LeaseOut:
    return release_lease(session, body, datetime.now(UTC))
