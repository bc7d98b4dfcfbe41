"""What `peerwatch drain` does reaches a real Alertmanager: NodeTakenOutByPeerwatch while a
node is out by peerwatch, DrainBreakerOpen while the breaker is open; both resolved there
when the node is back and the breaker reset."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy.orm import Session, sessionmaker

from peerwatch.app.alerting.settings import AlertingSettings
from peerwatch.app.judging.service import AlertingService
from peerwatch.app.runtime.config import Settings
from peerwatch.app.schemas.drain import ActionIn, BreakerReset
from peerwatch.app.services.drain import record_action, reset_breaker
from tests.app.alerting.real_alertmanager import alerts_in


def _action(kind: str, host: str | None, reason: str) -> ActionIn:
    return ActionIn(host=host, scheduler="slurm", kind=kind, mode="act", reason=reason,  # type: ignore[arg-type]
                    actor="peerwatch-drain@head")


def test_drain_alerts_reach_alertmanager_and_resolve_there(
        sessions: sessionmaker[Session], sqlite_settings: Settings,
        alertmanager_url: str) -> None:
    alerting = AlertingSettings(alert_eval_interval_s=0, alertmanager_url=alertmanager_url,
                                external_url="http://peerwatch.test:8000")
    service = AlertingService(sessions, sqlite_settings, alerting)
    with sessions() as s:
        record_action(s, _action("take_out", "gpu-b", "GPU5 down: all 18 NVLinks down"),
                      datetime.now(UTC))
        record_action(s, _action("breaker_trip", None, "2 more take-outs would pass the "
                                 "limit of 5 take-outs within 600 s"), datetime.now(UTC))
    assert service.deliver(datetime.now(UTC)).sent == 2
    held = {a["labels"]["alertname"]: a for a in alerts_in(alertmanager_url)}
    node = held["NodeTakenOutByPeerwatch"]
    assert node["labels"] == {"alertname": "NodeTakenOutByPeerwatch", "severity": "warning",
                              "host": "gpu-b", "scheduler": "slurm"}
    assert node["annotations"]["description"] == "GPU5 down: all 18 NVLinks down"
    assert held["DrainBreakerOpen"]["labels"]["severity"] == "critical"

    with sessions() as s:
        record_action(s, _action("return", "gpu-b", "healthy since 03:10"), datetime.now(UTC))
        reset_breaker(s, BreakerReset(by="alice"), datetime.now(UTC))
    assert service.deliver(datetime.now(UTC)).sent == 2
    names = {a["labels"]["alertname"] for a in alerts_in(alertmanager_url)}
    assert not names & {"NodeTakenOutByPeerwatch", "DrainBreakerOpen"}
