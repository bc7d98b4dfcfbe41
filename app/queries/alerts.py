"""Reading alerts, their history and silences: the SQL behind the alerts and silences routes.

Routes only translate HTTP (docs/architecture.md); the filters and orderings an operator relies on —
firing before pending before resolved, newest first — live here, once.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import case, select
from sqlalchemy.orm import Session

from peerwatch.app.store.tables.alerts import ACTIVE_STATES, Alert, AlertEvent, Silence

STATE_ORDER = case((Alert.state == "firing", 0), (Alert.state == "pending", 1), else_=2)


def find_alerts(session: Session, state: str | None, host: str | None, rule: str | None,
                limit: int) -> list[Alert]:
    """Alerts firing first, then pending, then the rest, newest first within each.

    `state` None means the active ones (pending and firing), "all" every state."""
    query = select(Alert)
    if state is None:
        query = query.where(Alert.state.in_(ACTIVE_STATES))
    elif state != "all":
        query = query.where(Alert.state == state)
    if host is not None:
        query = query.where(Alert.host == host)
    if rule is not None:
        query = query.where(Alert.rule == rule)
    query = query.order_by(STATE_ORDER, Alert.updated_at.desc(), Alert.id.desc()).limit(limit)
    return list(session.scalars(query))


def alert_history(session: Session, alert_id: int) -> Sequence[AlertEvent]:
    """Every state change of one alert, oldest first."""
    return session.scalars(select(AlertEvent).where(AlertEvent.alert_id == alert_id)
                           .order_by(AlertEvent.at, AlertEvent.id)).all()


def find_silences(session: Session, now: datetime, expired: bool) -> Sequence[Silence]:
    """Silences newest first; expired ones only when asked for."""
    query = select(Silence)
    if not expired:
        query = query.where(Silence.ends_at > now)
    return session.scalars(query.order_by(Silence.created_at.desc(), Silence.id.desc())).all()
