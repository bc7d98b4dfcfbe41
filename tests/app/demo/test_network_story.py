"""The demo's network story finds its bad cable by triangulation: one host fault, alerted,
the host left out of cross-node placement."""

from __future__ import annotations

from datetime import UTC, datetime

from fastapi.testclient import TestClient

from peerwatch.app.alerting.settings import AlertingSettings
from peerwatch.app.demo.network import run_network_story
from peerwatch.app.runtime.config import Settings
from tests.app.conftest import probe_headers
from tests.app.factory import sweep

HOSTS = [f"demo-{i:02d}" for i in range(1, 9)]


def test_the_demo_shows_a_bad_cable_found_by_triangulation(client: TestClient,
                                                           settings: Settings) -> None:
    for host in HOSTS:
        r = client.post("/api/v1/reports", content=sweep(host=host, at=datetime.now(
            UTC)).model_dump_json(), headers={**probe_headers(), "Content-Type":
                                              "application/json"})
        assert r.status_code == 201, r.text
    story = run_network_story(client.app.state.sessionmaker, settings, AlertingSettings(),
                              HOSTS)
    assert "host demo-02: demo-02 is slow with every one of its" in story, story
    faults = client.get("/api/v1/network/pairs").json()["faults"]
    assert [(f["kind"], f["subject"]) for f in faults] == [("host", "demo-02")]
    alerts = [a["labels"] for a in client.get("/api/v1/alerts").json()["alerts"]]
    assert {"alertname": "NetworkHostPathSlow", "host": "demo-02"}.items() <= alerts[0].items()
    nodes = client.get("/api/v1/scheduler/nodes", params={"count": 4}).json()
    assert [n["host"] for n in nodes["nodes"]] == HOSTS[4:]
