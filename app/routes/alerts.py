"""Alerts of the server's own rules: list, detail with history, acknowledgement.

Reading is open like the rest of the read API; acknowledging needs the admin token
(`Authorization: Bearer <PEERWATCH_ADMIN_TOKEN>`: 401 without one, 403 with another).
The rules' evaluation itself runs after each ingest and periodically (see
`app/judging/service.py`; its periodic round is one of `create_app`'s background jobs).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, HTTPException, Query, Request, status
from sqlalchemy.orm import Session

from peerwatch.app.alerting import admin as alert_admin
from peerwatch.app.alerting.silences import active_silences, silenced_by
from peerwatch.app.analysis.debounce import Hold
from peerwatch.app.api.deps import AdminDep, HostQuery, RowId, SessionDep
from peerwatch.app.api.json_body import StrictJsonRoute
from peerwatch.app.judging.service import service_for
from peerwatch.app.queries.alerts import alert_history, find_alerts
from peerwatch.app.queries.page_holds import page_holds
from peerwatch.app.schemas.alerts import (
    Acknowledgement,
    AckRequest,
    AlertDetail,
    AlertEventOut,
    AlertOut,
    AlertsResponse,
    AlertState,
)
from peerwatch.app.store.tables.alerts import Alert, Silence

router = APIRouter(prefix="/api/v1/alerts", tags=["alerts"], route_class=StrictJsonRoute)

def alert_out(alert: Alert, silences: list[Silence],
              holds: Mapping[str, Hold] | None = None) -> AlertOut:
    ack = None
    if alert.acked_at is not None and alert.acked_by is not None:
        ack = Acknowledgement(by=alert.acked_by, at=alert.acked_at)
    labels = {k: str(v) for k, v in alert.labels.items()}
    return AlertOut(
        id=alert.id, alertname=alert.rule, state=AlertState(alert.state),
        severity=labels.get("severity", ""), host=alert.host, labels=labels,
        annotations={k: str(v) for k, v in alert.annotations.items()}, value=alert.value,
        active_since=alert.active_since, fired_at=alert.fired_at,
        resolved_at=alert.resolved_at, updated_at=alert.updated_at, acknowledged=ack,
        silenced_by=silenced_by(silences, labels) if alert.state in ("pending", "firing")
        else [],
        **_held(alert, holds or {}),
    )


def _held(alert: Alert, holds: Mapping[str, Hold]) -> dict[str, Any]:
    hold = holds.get(alert.host or "") if alert.state in ("pending", "firing") else None
    return {"in_maintenance": hold is not None and hold.kind == "maintenance",
            "held": hold.reason if hold else None}


def holds_for(request: Request, session: Session, alerts: Sequence[Alert],
              now: datetime) -> dict[str, Hold]:
    settle_s = service_for(request.app).alerting.alert_settle_s
    return page_holds(session, now, settle_s, {a.host for a in alerts if a.host})


@router.get("", response_model=AlertsResponse, summary="Alerts, firing first")
def list_alerts(
    request: Request,
    session: SessionDep,
    state: Annotated[AlertState | Literal["all"] | None, Query(
        description="Default: pending and firing; `all` for every state.")] = None,
    host: HostQuery = None,
    alertname: Annotated[str | None, Query(description="Only this rule, e.g. NVLinkDown.")]
    = None,
    limit: Annotated[int, Query(ge=1, le=10_000)] = 500,
) -> AlertsResponse:
    rows = find_alerts(session, None if state is None else str(state), host, alertname, limit)
    now = datetime.now(UTC)
    silences = active_silences(session, now)
    holds = holds_for(request, session, rows, now)
    return AlertsResponse(alerts=[alert_out(a, silences, holds) for a in rows])


@router.get("/{alert_id}", response_model=AlertDetail, summary="One alert with its history")
def get_alert(alert_id: RowId, request: Request, session: SessionDep) -> AlertDetail:
    alert = alert_admin.get_alert(session, alert_id)
    events = alert_history(session, alert_id)
    now = datetime.now(UTC)
    base = alert_out(alert, active_silences(session, now),
                     holds_for(request, session, [alert], now))
    history = [AlertEventOut(state=e.state, at=e.at, value=e.value, message=e.message)
               for e in events]
    return AlertDetail(**base.model_dump(), history=history)


@router.post("/{alert_id}/ack", response_model=AlertOut,
             summary="Acknowledge a pending or firing alert (admin credential)",
             responses={409: {"description": "The alert is resolved or inactive: only "
                                             "pending or firing alerts can be acknowledged."}})
def ack_alert(alert_id: RowId, body: AckRequest, session: SessionDep,
              admin: AdminDep) -> AlertOut:
    now = datetime.now(UTC)
    body = body.model_copy(update={"by": admin.recorded_as(body.by)})
    try:
        alert = alert_admin.acknowledge(session, alert_id, body, now)
    except alert_admin.AlertNotActive as exc:
        raise HTTPException(status.HTTP_409_CONFLICT, detail=str(exc)) from exc
    return alert_out(alert, active_silences(session, now))
