"""Silences: mute matching alerts for a time (creating and expiring need the admin token;
the writes are `app/alerting/admin.py`'s)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Query, status

from peerwatch.app.alerting import admin as alert_admin
from peerwatch.app.api.deps import AdminDep, RowId, SessionDep
from peerwatch.app.api.errors import unprocessable
from peerwatch.app.api.json_body import StrictJsonRoute
from peerwatch.app.queries.alerts import find_silences
from peerwatch.app.schemas.alerts import SilenceOut, SilenceRequest, SilencesResponse
from peerwatch.app.store.tables.alerts import Silence

router = APIRouter(prefix="/api/v1/silences", tags=["alerts"], route_class=StrictJsonRoute)


def silence_out(s: Silence, now: datetime) -> SilenceOut:
    return SilenceOut(id=s.id, matchers=list(s.matchers), starts_at=s.starts_at,
                      ends_at=s.ends_at, created_by=s.created_by, comment=s.comment,
                      created_at=s.created_at, active=s.starts_at <= now < s.ends_at)


@router.post("", response_model=SilenceOut, status_code=status.HTTP_201_CREATED,
             summary="Create a silence (admin credential)")
def create_silence(body: SilenceRequest, session: SessionDep,
                   admin: AdminDep) -> SilenceOut:
    now = datetime.now(UTC)
    body = body.model_copy(update={"created_by": admin.recorded_as(body.created_by)})
    try:
        silence = alert_admin.create_silence(session, body, now)
    except ValueError as exc:
        raise unprocessable("ends_at", str(exc)) from exc
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
               summary="Expire a silence now (admin credential)")
def expire_silence(silence_id: RowId, session: SessionDep, _admin: AdminDep) -> SilenceOut:
    now = datetime.now(UTC)
    return silence_out(alert_admin.expire_silence(session, silence_id, now), now)
