"""Send firing and resolved alerts to Alertmanager, and remember what was sent.

Due now: a firing alert never sent, or last sent a resend interval ago (its `endsAt` is set
4 intervals ahead, like Prometheus, so Alertmanager keeps it only while peerwatch keeps
saying so); a resolved alert whose firing was sent but whose resolution was not (sent with
`endsAt` = when it resolved). Silenced alerts are not sent, nor are those of a host in a
maintenance window or still settling after its probe or driver started (`page_holds`).
A failure to reach Alertmanager is logged and changes nothing, so the next round sends the
same alerts again: nothing is lost, and ingest never waits on it. Two replicas may both send
an alert; Alertmanager de-duplicates by label set, which is what Prometheus HA pairs rely on
too.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import and_, or_, select, update
from sqlalchemy.orm import Session, sessionmaker

from peerwatch.app.alerting.alertmanager import (
    AlertmanagerClient,
    AlertmanagerUnavailable,
    OutgoingAlert,
)
from peerwatch.app.alerting.settings import AlertingSettings
from peerwatch.app.alerting.silences import active_silences, silenced_by
from peerwatch.app.queries.page_holds import page_holds
from peerwatch.app.store.tables.alerts import Alert

log = logging.getLogger(__name__)

ENDS_AT_RESENDS = 4  # Prometheus: endsAt = now + 4 x max(resend delay, eval interval)


@dataclass
class Delivery:
    sent: int = 0
    error: str | None = None


def due(session: Session, now: datetime, alerting: AlertingSettings) -> list[Alert]:
    stale = now - timedelta(seconds=alerting.alertmanager_resend_s)
    firing = and_(Alert.state == "firing", or_(
        Alert.notified_state.is_(None), Alert.notified_state != "firing",
        Alert.notified_at.is_(None), Alert.notified_at <= stale))
    resolved = and_(Alert.state == "resolved", Alert.notified_state == "firing")
    rows = list(session.scalars(select(Alert).where(or_(firing, resolved)).order_by(Alert.id)))
    silences = active_silences(session, now)
    held = page_holds(session, now, alerting.alert_settle_s, {a.host for a in rows if a.host})
    return [a for a in rows if a.state == "resolved" or (
        not silenced_by(silences, a.labels) and a.host not in held)]


def outgoing(alert: Alert, now: datetime, alerting: AlertingSettings) -> OutgoingAlert:
    if alert.state == "resolved":
        ends_at = alert.resolved_at or now
    else:
        ends_at = now + ENDS_AT_RESENDS * timedelta(
            seconds=max(alerting.alertmanager_resend_s, alerting.alert_eval_interval_s))
    annotations = {k: str(v) for k, v in alert.annotations.items()}
    if "dashboard" in annotations:
        annotations["dashboard"] = alerting.external_url + annotations["dashboard"]
    return OutgoingAlert(
        labels={k: str(v) for k, v in alert.labels.items()},
        annotations=annotations,
        starts_at=alert.fired_at or alert.active_since,
        ends_at=ends_at,
        generator_url=f"{alerting.external_url}/api/v1/alerts/{alert.id}",
    )


def deliver(sessions: sessionmaker[Session], client: AlertmanagerClient, now: datetime,
            alerting: AlertingSettings) -> Delivery:
    """Send what is due; mark it sent only when Alertmanager took it."""
    with sessions() as session:
        rows = due(session, now, alerting)
        batch = [(a.id, a.state, outgoing(a, now, alerting)) for a in rows]
    if not batch:
        return Delivery()
    try:
        client.post([alert for _, _, alert in batch])
    except AlertmanagerUnavailable as exc:
        log.warning("alerts not delivered, will retry: %s", exc)
        return Delivery(error=str(exc))
    with sessions() as session:
        for alert_id, state, _ in batch:
            # Only if the state did not move meanwhile: a newer state is due on its own.
            session.execute(update(Alert).where(Alert.id == alert_id, Alert.state == state)
                            .values(notified_at=now, notified_state=state))
        session.commit()
    return Delivery(sent=len(batch))
