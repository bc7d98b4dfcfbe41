"""Debounce where faults are expected, on SQLite and PostgreSQL: maintenance
windows through the admin API and the CLI, and no pages inside them or while a host settles
after its probe or driver started; the alerts are still computed and shown."""

from __future__ import annotations

import argparse
from datetime import timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from peerwatch.app.alerting.notify import due
from peerwatch.app.alerting.settings import AlertingSettings
from peerwatch.app.cli.commands.maintenance import parse_duration, run
from peerwatch.app.judging.sessions import make_sessionmaker
from peerwatch.app.runtime.config import Settings
from peerwatch.app.schemas.maintenance import MaintenanceRequest
from peerwatch.app.services.maintenance import declare_window
from peerwatch.app.store.db import make_engine
from peerwatch.probes.errors import BadProbeRequest
from peerwatch.probes.sim.faults import LinksDown
from tests.app.alerting.simhost import SimHost
from tests.app.conftest import ADMIN_TOKEN, credential

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
ALERTING = AlertingSettings(alert_eval_interval_s=0, alert_settle_s=300)


@pytest.fixture
def sessions(settings: Settings):
    engine = make_engine(settings)
    yield make_sessionmaker(engine)
    engine.dispose()


def broken_host(sessions: sessionmaker[Session], settings: Settings, name: str) -> SimHost:
    host = SimHost(sessions, settings, ALERTING, hostname=name)
    host.send()
    host.inject(LinksDown(gpu=0, count=1))
    host.step(30)
    host.step(60)
    assert host.firing() == {"NVLinkDown", "NVLinkWidthReduced"}
    return host


def paged(sessions: sessionmaker[Session], host: SimHost, at_s: float = 0.0) -> set[str]:
    with sessions() as session:
        return {a.rule for a in due(session, host.now() + timedelta(seconds=at_s), ALERTING)
                if a.host == host.hostname}


def test_no_pages_inside_a_window_alerts_still_firing(
        sessions: sessionmaker[Session], settings: Settings) -> None:
    host = broken_host(sessions, settings, "maint-a")
    other = broken_host(sessions, settings, "maint-b")
    assert paged(sessions, host) == {"NVLinkDown", "NVLinkWidthReduced"}
    with sessions() as session:
        declare_window(session, MaintenanceRequest(host="maint-a", starts_at=host.now(),
                                                   duration_s=3600, comment="cable swap"),
                       host.now())
    assert paged(sessions, host) == set()
    assert paged(sessions, other) == {"NVLinkDown", "NVLinkWidthReduced"}  # only that host
    host.step(30)
    assert host.firing() == {"NVLinkDown", "NVLinkWidthReduced"}  # still judged and shown
    assert paged(sessions, host, 3600) == {"NVLinkDown", "NVLinkWidthReduced"}  # ended


def test_pages_settle_after_the_probe_starts(
        sessions: sessionmaker[Session], settings: Settings) -> None:
    host = SimHost(sessions, settings, ALERTING, hostname="settle-a")
    host.fabric.started_at = host.now()  # the probe (re)started with the host's reboot
    host.send()
    host.inject(LinksDown(gpu=0, count=1))
    host.step(30)
    host.step(60)
    assert host.firing() == {"NVLinkDown", "NVLinkWidthReduced"}
    assert paged(sessions, host) == set()  # 90 s after the start: links may still train
    assert paged(sessions, host, 300) == {"NVLinkDown", "NVLinkWidthReduced"}


def test_admin_api_declares_lists_and_ends_windows(
        client: TestClient, sessions: sessionmaker[Session], settings: Settings) -> None:
    body = {"host": "maint-api", "duration_s": 7200, "comment": "NVSwitch tray"}
    assert client.post("/api/v1/maintenance", json=body).status_code == 401
    bad = client.post("/api/v1/maintenance", json={"host": "x"}, headers=ADMIN)
    assert bad.status_code == 422 and "exactly one of ends_at and duration_s" in bad.text
    made = client.post("/api/v1/maintenance", json=body, headers=ADMIN)
    assert made.status_code == 201 and made.json()["active"] is True
    [listed] = client.get("/api/v1/maintenance", params={"host": "maint-api"}).json()["windows"]
    assert listed["id"] == made.json()["id"] and listed["comment"] == "NVSwitch tray"

    broken_host(sessions, settings, "maint-api")
    alerts = client.get("/api/v1/alerts", params={"host": "maint-api"}).json()["alerts"]
    assert {a["alertname"] for a in alerts} == {"NVLinkDown", "NVLinkWidthReduced"}
    assert all(a["in_maintenance"] and a["held"].startswith("in maintenance until")
               for a in alerts)
    assert "NVSwitch tray" in alerts[0]["held"]

    ended = client.delete(f"/api/v1/maintenance/{listed['id']}", headers=ADMIN)
    assert ended.status_code == 200 and ended.json()["active"] is False
    assert client.get("/api/v1/maintenance").json()["windows"] == []
    assert len(client.get("/api/v1/maintenance", params={"ended": True}).json()["windows"]) == 1
    alerts = client.get("/api/v1/alerts", params={"host": "maint-api"}).json()["alerts"]
    assert not any(a["in_maintenance"] for a in alerts)
    assert client.delete("/api/v1/maintenance/999", headers=ADMIN).status_code == 404


def test_cli_declares_a_window(client: TestClient, capsys: pytest.CaptureFixture[str],
                               tmp_path: Path) -> None:
    token_file = tmp_path / "admin-token"
    token_file.write_text(credential(client, "admin", "alice")["Authorization"][7:] + "\n")
    args = argparse.Namespace(host="cli-host", duration="1h30m", server="http://testserver",
                              token_file=token_file, comment="reboot", by="mallory")
    assert run(args, transport=client._transport) == 0
    assert "cli-host in maintenance from" in capsys.readouterr().out
    [window] = client.get("/api/v1/maintenance").json()["windows"]
    span = (pd(window["ends_at"]) - pd(window["starts_at"])).total_seconds()
    assert (window["created_by"], span) == ("admin:alice", 5400)  # the credential's name
    token_file.write_text("wrong\n")
    assert run(args, transport=client._transport) == 3


def pd(text: str):
    from datetime import datetime
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def test_duration_parsing() -> None:
    assert parse_duration("2h") == 7200
    assert parse_duration("1h30m") == 5400
    assert parse_duration("45s") == 45
    for bad in ("2", "2x", "h", "0m", "-1h"):
        with pytest.raises(BadProbeRequest, match="duration"):
            parse_duration(bad)
