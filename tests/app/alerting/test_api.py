"""The alerts and silences API, through the real app on SQLite and PostgreSQL.

Reports are posted through `POST /api/v1/reports` like a probe's; the ingest hook evaluates
the rules (with `for` set to 0 here so a single report fires them).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from peerwatch.app.alerting.settings import AlertingSettings
from peerwatch.app.main import create_app
from peerwatch.app.runtime.config import Settings
from peerwatch.app.schemas.alerts import AlertState
from peerwatch.probes.report import ReportKind
from peerwatch.probes.sim.faults import LinksDown
from peerwatch.probes.sim.simulated import SimulatedFabric
from peerwatch.probes.sweep import build_report
from tests.app.alerting.simhost import QUICK
from tests.app.conftest import ADMIN_TOKEN, credential, probe_headers
from tests.app.judged_client import JudgedClient
from tests.app.metrics_helpers import promtool_check, value
from tests.conftest import eventually

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
DOWN = LinksDown(gpu=0, count=1)


def _app(settings: Settings, **alerting: object) -> TestClient:
    app = create_app(settings)
    app.state.alerting_settings = AlertingSettings(
        alert_eval_interval_s=0, alert_for_s={"NVLinkDown": 0, "NVLinkWidthReduced": 0},
        **alerting)
    return JudgedClient(app)


def _post(client: TestClient, fabric: SimulatedFabric, kind: ReportKind) -> None:
    report = build_report(fabric, kind, QUICK)
    r = client.post("/api/v1/reports", content=report.model_dump_json(),
                    headers={**probe_headers(), "Content-Type": "application/json"})
    assert r.status_code == 201, r.text


@pytest.fixture
def api(settings: Settings) -> Iterator[TestClient]:
    """A host `api-a` whose GPU0 has lost link 17 (NVLinkDown, NVLinkWidthReduced fire)."""
    with _app(settings) as client:
        fabric = SimulatedFabric("h200x2", seed=3, hostname="api-a", faults=[DOWN])
        _post(client, fabric, ReportKind.SWEEP)
        yield client


def _firing(client: TestClient) -> dict[str, dict]:
    alerts = client.get("/api/v1/alerts", params={"state": "firing"}).json()["alerts"]
    return {a["alertname"]: a for a in alerts}


def test_list_filters_and_detail_with_history(api: TestClient) -> None:
    firing = _firing(api)
    assert set(firing) == {"NVLinkDown", "NVLinkWidthReduced"}
    link = firing["NVLinkDown"]
    assert (link["state"], link["severity"], link["host"]) == ("firing", "critical", "api-a")
    assert link["labels"]["link"] == "17"
    assert link["annotations"]["dashboard"] == "/#/host/api-a?gpu=0"
    assert [a["alertname"] for a in api.get("/api/v1/alerts").json()["alerts"]] != []
    assert api.get("/api/v1/alerts", params={"host": "elsewhere"}).json()["alerts"] == []
    assert api.get("/api/v1/alerts", params={"state": "resolved"}).json()["alerts"] == []
    bad = api.get("/api/v1/alerts", params={"state": "burning"})
    assert bad.status_code == 422 and "state" in str(bad.json()["detail"][0]["loc"])

    detail = api.get(f"/api/v1/alerts/{link['id']}").json()
    assert [e["state"] for e in detail["history"]] == ["firing"]
    missing = api.get("/api/v1/alerts/999999")
    assert missing.status_code == 404 and missing.json()["detail"] == "alert 999999 not found"

    hosts = api.get("/api/v1/hosts").json()["hosts"]
    assert {h["host"]: h["alerts_firing"] for h in hosts} == {"api-a": 2}


def test_ack_needs_the_admin_token(api: TestClient) -> None:
    alert_id = _firing(api)["NVLinkDown"]["id"]
    body = {"by": "alice", "comment": "reseating the cable"}
    url = f"/api/v1/alerts/{alert_id}/ack"
    assert api.post(url, json=body).status_code == 401
    assert api.post(url, json=body, headers={"Authorization": "Bearer nope"}).status_code == 403
    done = api.post(url, json=body, headers=ADMIN)  # the shared token: what it says is marked
    assert done.status_code == 200
    assert done.json()["acknowledged"]["by"] == "admin:admin-token (says alice)"
    history = api.get(f"/api/v1/alerts/{alert_id}").json()["history"]
    assert history[-1]["state"] == "acknowledged"
    assert history[-1]["message"] == ("acknowledged by admin:admin-token (says alice): "
                                      "reseating the cable")
    assert api.post("/api/v1/alerts/999999/ack", json=body, headers=ADMIN).status_code == 404


def test_only_active_alerts_can_be_acked(settings: Settings) -> None:
    with _app(settings) as client:
        fabric = SimulatedFabric("h200x2", seed=3, hostname="api-b", faults=[DOWN])
        _post(client, fabric, ReportKind.INVENTORY)
        alert_id = _firing(client)["NVLinkDown"]["id"]
        fabric.clear(DOWN)
        _post(client, fabric, ReportKind.INVENTORY)
        assert _firing(client) == {}
        r = client.post(f"/api/v1/alerts/{alert_id}/ack", json={"by": "bob"}, headers=ADMIN)
        assert r.status_code == 409 and "resolved" in r.json()["detail"]
        history = client.get(f"/api/v1/alerts/{alert_id}").json()["history"]
        assert [e["state"] for e in history] == ["firing", "resolved"]


def test_silences_create_list_mute_and_expire(api: TestClient) -> None:
    body = {"matchers": [{"name": "alertname", "value": "NVLink(Down|WidthReduced)",
                          "is_regex": True}, {"name": "host", "value": "api-a"}],
            "duration_s": 3600, "created_by": "alice", "comment": "cable swap"}
    assert api.post("/api/v1/silences", json=body).status_code == 401
    assert api.post("/api/v1/silences", json=body,
                    headers={"Authorization": "Bearer x"}).status_code == 403
    made = api.post("/api/v1/silences", json=body, headers=credential(api, "admin", "alice"))
    assert made.status_code == 201, made.text
    silence = made.json()
    assert silence["active"] and silence["created_by"] == "admin:alice"
    assert [s["id"] for s in api.get("/api/v1/silences").json()["silences"]] == [silence["id"]]
    assert {a["silenced_by"] == [silence["id"]] for a in _firing(api).values()} == {True}

    gone = api.delete(f"/api/v1/silences/{silence['id']}", headers=ADMIN)
    assert gone.status_code == 200 and not gone.json()["active"]
    assert api.get("/api/v1/silences").json()["silences"] == []
    assert len(api.get("/api/v1/silences", params={"expired": True}).json()["silences"]) == 1
    assert {a["silenced_by"] == [] for a in _firing(api).values()} == {True}
    assert api.delete("/api/v1/silences/999999", headers=ADMIN).status_code == 404
    assert api.delete(f"/api/v1/silences/{silence['id']}").status_code == 401


@pytest.mark.parametrize(("change", "complaint"), [
    ({"matchers": [{"name": "host", "value": "(", "is_regex": True}]}, "not a valid regex"),
    ({"matchers": [{"name": "bad-name", "value": "x"}]}, "is not a label name"),
    ({"matchers": []}, "at least 1 item"),
    ({"ends_at": "2030-01-01T00:00:00Z"}, "exactly one of ends_at and duration_s"),
    ({"duration_s": None, "ends_at": "2030-01-01T00:00:00"}, "needs a time zone"),
    ({"duration_s": None, "starts_at": "2030-01-02T00:00:00Z", "ends_at": "2030-01-01T00:00:00Z"},
     "is not after starts_at"),
])
def test_bad_silences_are_refused_naming_the_problem(api: TestClient, change: dict,
                                                     complaint: str) -> None:
    body = {"matchers": [{"name": "host", "value": "api-a"}], "duration_s": 60,
            "created_by": "alice", **change}
    r = api.post("/api/v1/silences", json=body, headers=ADMIN)
    assert r.status_code == 422 and complaint in r.text, r.text


def test_metrics_show_the_fault_and_its_alerts(api: TestClient) -> None:
    r = api.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    text = r.text
    assert promtool_check(text) == ""
    assert value(text, "peerwatch_probe_last_received_timestamp_seconds", host="api-a")
    assert value(text, "peerwatch_alerts", alertname="NVLinkDown", state="firing",
                 severity="critical", host="api-a") == 1
    assert "python_gc_objects_collected_total" not in text  # our own registry only


def test_ingest_never_waits_on_a_dead_alertmanager(settings: Settings) -> None:
    with _app(settings, alertmanager_url="http://127.0.0.1:9",
              alertmanager_timeout_s=0.5) as client:
        fabric = SimulatedFabric("h200x2", seed=3, hostname="api-c", faults=[DOWN])
        _post(client, fabric, ReportKind.INVENTORY)
        assert set(_firing(client)) == {"NVLinkDown", "NVLinkWidthReduced"}


def test_the_server_evaluates_periodically(settings: Settings) -> None:
    """The loop the alerts router's lifespan starts: a host that went silent goes stale."""
    app = create_app(settings.model_copy(update={"stale_after_s": 0.3}))
    app.state.alerting_settings = AlertingSettings(alert_eval_interval_s=0.2)
    with JudgedClient(app) as client:
        _post(client, SimulatedFabric("h200x2", seed=3, hostname="api-d"), ReportKind.INVENTORY)
        assert eventually(lambda: "ProbeStale" in _firing(client))


def test_state_all_lists_alerts_of_every_state(api: TestClient) -> None:
    every = api.get("/api/v1/alerts", params={"state": "all"})
    assert every.status_code == 200, every.text
    per_state = [a["id"] for s in AlertState
                 for a in api.get("/api/v1/alerts", params={"state": s.value}).json()["alerts"]]
    assert len(per_state) >= 2
    assert sorted(a["id"] for a in every.json()["alerts"]) == sorted(per_state)
