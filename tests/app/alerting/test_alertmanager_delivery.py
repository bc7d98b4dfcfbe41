"""Firing and resolved alerts reach a real Alertmanager; failures are retried, never lost."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy.orm import Session, sessionmaker

from peerwatch.app.alerting.settings import AlertingSettings
from peerwatch.app.judging.service import AlertingService
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.tables.alerts import Silence
from peerwatch.probes.sim.faults import LinksDown
from tests.app.alerting.real_alertmanager import alerts_in
from tests.app.alerting.simhost import SimHost

EXTERNAL = "http://peerwatch.test:8000"


def _host(sessions: sessionmaker[Session], settings: Settings, url: str,
          name: str) -> SimHost:
    """A host whose fake clock ends near the real one: Alertmanager judges endsAt by it."""
    alerting = AlertingSettings(alert_eval_interval_s=0, alertmanager_url=url,
                                external_url=EXTERNAL, alertmanager_resend_s=60)
    return SimHost(sessions, settings, alerting, hostname=name,
                   start=datetime.now(UTC) - timedelta(minutes=5))


def _break_link(host: SimHost) -> LinksDown:
    host.send()
    down = LinksDown(gpu=0, count=1)
    host.inject(down)
    host.step(30)
    host.step(60)
    assert host.firing() == {"NVLinkDown", "NVLinkWidthReduced"}
    return down


def _held(url: str, host: str) -> dict[str, dict]:
    return {a["labels"]["alertname"]: a for a in alerts_in(url)
            if a["labels"].get("host") == host}


def test_firing_alerts_are_posted_resent_and_resolved(
        sessions: sessionmaker[Session], sqlite_settings: Settings,
        alertmanager_url: str) -> None:
    host = _host(sessions, sqlite_settings, alertmanager_url, "am-round-trip")
    down = _break_link(host)

    assert host.service.deliver(host.now()).sent == 2  # type: ignore[union-attr]
    held = _held(alertmanager_url, "am-round-trip")
    assert set(held) == {"NVLinkDown", "NVLinkWidthReduced"}
    link = held["NVLinkDown"]
    assert link["labels"] == {"alertname": "NVLinkDown", "severity": "critical",
                              "host": "am-round-trip", "gpu": "0", "link": "17"}
    assert link["annotations"]["summary"] == "NVLink 17 of GPU0 on am-round-trip is down"
    assert link["annotations"]["dashboard"] == f"{EXTERNAL}/#/host/am-round-trip?gpu=0"
    [row] = host.alerts(rule="NVLinkDown")
    assert link["generatorURL"] == f"{EXTERNAL}/api/v1/alerts/{row.id}"
    assert link["status"]["state"] == "active"
    ends = datetime.fromisoformat(link["endsAt"])
    assert ends > datetime.now(UTC)  # kept alive by us, not forever

    assert host.service.deliver(host.now()).sent == 0  # type: ignore[union-attr]
    host.advance(61)
    assert host.service.deliver(host.now()).sent == 2  # type: ignore[union-attr]

    host.clear(down)
    host.step(1)
    assert {a.state for a in host.alerts()} == {"resolved"}
    assert host.service.deliver(host.now()).sent == 2  # type: ignore[union-attr]
    assert _held(alertmanager_url, "am-round-trip") == {}
    assert host.service.deliver(host.now()).sent == 0  # type: ignore[union-attr]


def test_an_unreachable_alertmanager_is_logged_and_retried(
        sessions: sessionmaker[Session], sqlite_settings: Settings, alertmanager_url: str,
        caplog: pytest.LogCaptureFixture) -> None:
    host = _host(sessions, sqlite_settings, "http://127.0.0.1:9", "am-retry")
    _break_link(host)
    with caplog.at_level(logging.WARNING, logger="peerwatch.app.alerting.notify"):
        delivery = host.service.deliver(host.now())
    assert delivery is not None and delivery.sent == 0 and delivery.error
    assert "alerts not delivered, will retry" in caplog.text
    assert {a.notified_state for a in host.alerts()} == {None}

    healed = AlertingService(sessions, sqlite_settings, AlertingSettings(
        alert_eval_interval_s=0, alertmanager_url=alertmanager_url, external_url=EXTERNAL))
    assert healed.deliver(host.now()).sent == 2  # type: ignore[union-attr]
    assert set(_held(alertmanager_url, "am-retry")) == {"NVLinkDown", "NVLinkWidthReduced"}


def test_silenced_alerts_are_not_sent(sessions: sessionmaker[Session],
                                      sqlite_settings: Settings, alertmanager_url: str) -> None:
    host = _host(sessions, sqlite_settings, alertmanager_url, "am-silenced")
    with sessions() as s:
        s.add(Silence(matchers=[{"name": "alertname", "value": "NVLink.*", "is_regex": True,
                                 "is_equal": True},
                                {"name": "host", "value": "am-silenced"}],
                      created_by="test", comment="cable swap", starts_at=host.now(),
                      ends_at=host.now() + timedelta(hours=1), created_at=host.now()))
        s.commit()
    _break_link(host)
    assert host.service.deliver(host.now()).sent == 0  # type: ignore[union-attr]
    assert _held(alertmanager_url, "am-silenced") == {}
