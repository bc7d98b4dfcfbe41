"""Maintenance windows: declare one for a host (admin credential), list them, end one early.

Inside a window the host's verdicts and alerts are computed and shown as always; its alerts
are marked "in maintenance" and are not sent to Alertmanager (`app/alerting/notify.py`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Query, status

from peerwatch.app.api.deps import AdminDep, HostQuery, RowId, SessionDep
from peerwatch.app.api.errors import unprocessable
from peerwatch.app.api.json_body import StrictJsonRoute
from peerwatch.app.queries.common import host_known
from peerwatch.app.queries.page_holds import list_windows
from peerwatch.app.schemas.maintenance import (
    MaintenanceOut,
    MaintenanceRequest,
    MaintenanceResponse,
)
from peerwatch.app.services.maintenance import declare_window, end_window
from peerwatch.app.store.tables.alerts import MaintenanceWindow

router = APIRouter(prefix="/api/v1/maintenance", tags=["alerts"], route_class=StrictJsonRoute)


def window_out(w: MaintenanceWindow, now: datetime) -> MaintenanceOut:
    return MaintenanceOut(id=w.id, host=w.host, starts_at=w.starts_at, ends_at=w.ends_at,
                          created_by=w.created_by, comment=w.comment, created_at=w.created_at,
                          active=w.starts_at <= now < w.ends_at)


@router.post("", response_model=MaintenanceOut, status_code=status.HTTP_201_CREATED,
             summary="Declare a maintenance window for a host (admin credential)")
def create_window(body: MaintenanceRequest, session: SessionDep,
                  admin: AdminDep) -> MaintenanceOut:
    now = datetime.now(UTC)
    body = body.model_copy(update={"created_by": admin.recorded_as(body.created_by)})
    try:
        window = declare_window(session, body, now)
    except ValueError as exc:
        raise unprocessable("ends_at", str(exc)) from exc
    out = window_out(window, now)
    out.host_known = host_known(session, window.host)
    return out


@router.get("", response_model=MaintenanceResponse,
            summary="Maintenance windows, latest start first")
def get_windows(
    session: SessionDep,
    host: HostQuery = None,
    ended: Annotated[bool, Query(description="Include windows that have ended.")] = False,
) -> MaintenanceResponse:
    now = datetime.now(UTC)
    return MaintenanceResponse(
        windows=[window_out(w, now) for w in list_windows(session, now, host, ended)])


@router.delete("/{window_id}", response_model=MaintenanceOut,
               summary="End a maintenance window now (admin credential)")
def delete_window(window_id: RowId, session: SessionDep, _admin: AdminDep) -> MaintenanceOut:
    now = datetime.now(UTC)
    return window_out(end_window(session, window_id, now), now)
