"""The admin API's writes on alerts and silences: acknowledge an alert, create a silence,
expire one. Routes call these (as the maintenance routes call `services/maintenance.py`; here in
alerting/ because the bodies are alerting's schemas, which services/ may not import),
so no route holds SQL or commits."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.orm import Session

from peerwatch.app.queries.common import NotFound
from peerwatch.app.schemas.alerts import AckRequest, SilenceRequest
from peerwatch.app.store.tables.alerts import Alert, AlertEvent, Silence


class AlertNotActive(Exception):
    """Only a pending or firing alert can be acknowledged (answered 409)."""


def get_alert(session: Session, alert_id: int) -> Alert:
    alert = session.get(Alert, alert_id)
    if alert is None:
        raise NotFound("alert", alert_id)
    return alert


def acknowledge(session: Session, alert_id: int, body: AckRequest, now: datetime) -> Alert:
    alert = get_alert(session, alert_id)
    if alert.state not in ("pending", "firing"):
        raise AlertNotActive(f"alert {alert_id} is {alert.state}; only pending or firing "
                             "alerts can be acknowledged")
    alert.acked_at, alert.acked_by = now, body.by
    message = f"acknowledged by {body.by}" + (f": {body.comment}" if body.comment else "")
    session.add(AlertEvent(alert_id=alert.id, state="acknowledged", at=now, value=None,
                           message=message))
    session.commit()
    return alert


def create_silence(session: Session, body: SilenceRequest, now: datetime) -> Silence:
    starts, ends = body.span(now)  # ValueError when the end is not after the start
    silence = Silence(matchers=[m.model_dump() for m in body.matchers],
                      created_by=body.created_by, comment=body.comment, starts_at=starts,
                      ends_at=ends, created_at=now)
    session.add(silence)
    session.commit()
    return silence


def expire_silence(session: Session, silence_id: int, now: datetime) -> Silence:
    """End the silence now (a future one ends where it starts); expired ones stay listed."""
    silence = session.get(Silence, silence_id)
    if silence is None:
        raise NotFound("silence", silence_id)
    if silence.ends_at > now:
        silence.ends_at = max(now, silence.starts_at)
        session.commit()
    return silence
