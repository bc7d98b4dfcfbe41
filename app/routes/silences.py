"""Silences: mute matching alerts for a time (creating and expiring need the admin token)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, status

from app.alerting.schemas import SilenceOut, SilenceRequest, SilencesResponse
from app.deps import AdminTokenDep, RowId, SessionDep
from app.errors import unprocessable
from app.json_body import StrictJsonRoute
from app.models import Silence
from app.queries.alerts import find_silences

router = APIRouter(prefix="/api/v1/silences", tags=["alerts"], route_class=StrictJsonRoute)


def silence_out(s: Silence, now: datetime) -> SilenceOut:
    return SilenceOut(id=s.id, matchers=list(s.matchers), starts_at=s.starts_at,
                      ends_at=s.ends_at, created_by=s.created_by, comment=s.comment,
                      created_at=s.created_at, active=s.starts_at <= now < s.ends_at)


@router.post("", response_model=SilenceOut, status_code=status.HTTP_201_CREATED,
             summary="Create a silence (admin token)")
def create_silence(body: SilenceRequest, session: SessionDep,
                   _admin: AdminTokenDep) -> SilenceOut:
    now = datetime.now(UTC)
    try:
        starts, ends = body.span(now)
    except ValueError as exc:
        raise unprocessable("ends_at", str(exc)) from exc
    silence = Silence(matchers=[m.model_dump() for m in body.matchers],
                      created_by=body.created_by, comment=body.comment, starts_at=starts,
                      ends_at=ends, created_at=now)
    session.add(silence)
    session.commit()
    return silence_out(silence, now)


@router.get("", response_model=SilencesResponse, summary="Silences, newest first")
def list_silences(
    session: SessionDep,
    expired: Annotated[bool, Query(description="Include expired ones.")] = False,
) -> SilencesResponse:
    now = datetime.now(UTC)
    rows = find_silences(session, now, expired)
    return SilencesResponse(silences=[silence_out(s, now) for s in rows])


@router.delete("/{silence_id}", response_model=SilenceOut,
               summary="Expire a silence now (admin token)")
def expire_silence(silence_id: RowId, session: SessionDep, _admin: AdminTokenDep) -> SilenceOut:
    silence = session.get(Silence, silence_id)
    if silence is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND,
                            detail=f"silence {silence_id} not found")
    now = datetime.now(UTC)
    if silence.ends_at > now:
        silence.ends_at = max(now, silence.starts_at)
        session.commit()
    return silence_out(silence, now)
