"""The drain API on SQLite and PostgreSQL: actions keep ownership marks, the breaker and their
alerts in step, /metrics counts them, Alertmanager is due to hear of them, and the state the
controller reads carries the stored verdicts."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text

from peerwatch.app.alerting.notify import due
from peerwatch.app.judging.service import service_for
from peerwatch.app.schemas.drain import ActionIn
from peerwatch.app.services.drain import drain_lock, record_action
from peerwatch.app.store.locks import transaction_lock
from tests.app.conftest import ADMIN_TOKEN, credential, probe_headers
from tests.app.factory import sweep
from tests.conftest import eventually

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
LIMIT_S = 120.0


def act(client: TestClient, kind: str, host: str | None = "gpu-b", mode: str = "act",
        reason: str = "GPU5 down: all 18 NVLinks down") -> dict:
    r = client.post("/api/v1/actions", headers=credential(client, "drain", "head"), json={
        "host": host, "scheduler": "slurm", "kind": kind, "mode": mode, "reason": reason,
        "actor": "peerwatch-drain@head"})
    assert r.status_code == 201, r.text
    return r.json()


def firing(client: TestClient, name: str) -> list[dict]:
    alerts = client.get("/api/v1/alerts").json()["alerts"]
    return [a for a in alerts if a["labels"]["alertname"] == name and a["state"] == "firing"]


def metric_lines(client: TestClient, prefix: str) -> list[str]:
    return [line for line in client.get("/metrics").text.splitlines()
            if line.startswith(prefix)]


def test_a_take_out_and_its_return_keep_mark_alert_and_metrics(client: TestClient) -> None:
    act(client, "take_out")
    [mark] = client.get("/api/v1/drain/state").json()["marks"]
    assert mark["applied"] and mark["text"].startswith("taken out by peerwatch ")
    assert mark["text"].endswith("GPU5 down: all 18 NVLinks down")
    [only] = client.get("/api/v1/drain/marks", params={"host": "gpu-b"}).json()["marks"]
    assert only == mark
    assert client.get("/api/v1/drain/marks", params={"host": "gpu-c"}).json()["marks"] == []
    [alert] = firing(client, "NodeTakenOutByPeerwatch")
    assert alert["labels"]["host"] == "gpu-b"
    with client.app.state.sessionmaker() as session:  # type: ignore[attr-defined]
        alerting = service_for(client.app).alerting
        assert "NodeTakenOutByPeerwatch" in {a.rule for a in due(session, datetime.now(UTC),
                                                                 alerting)}
    assert metric_lines(client, "peerwatch_drain_node_out{") == [
        'peerwatch_drain_node_out{host="gpu-b",scheduler="slurm"} 1.0']
    act(client, "return", reason="healthy since 03:10")
    assert client.get("/api/v1/drain/state").json()["marks"] == []
    assert firing(client, "NodeTakenOutByPeerwatch") == []
    assert metric_lines(client, "peerwatch_drain_node_out{") == []
    assert sorted(metric_lines(client, "peerwatch_drain_actions_total{")) == [
        'peerwatch_drain_actions_total{kind="return",mode="act",scheduler="slurm"} 1.0',
        'peerwatch_drain_actions_total{kind="take_out",mode="act",scheduler="slurm"} 1.0']
    listed = client.get("/api/v1/actions", params={"host": "gpu-b"}).json()["actions"]
    assert [(a["kind"], a["actor"]) for a in listed] == [
        ("return", "drain:head"), ("take_out", "drain:head")]


def test_a_repeated_take_out_is_recorded_once(client: TestClient) -> None:
    first = act(client, "take_out")
    assert act(client, "take_out")["id"] == first["id"]  # an overlapping round's report
    breaker = client.get("/api/v1/drain/breaker").json()
    assert breaker["taken_out_in_window"] == 1


def test_observe_mode_marks_without_alerting(client: TestClient) -> None:
    act(client, "take_out", mode="observe")
    [mark] = client.get("/api/v1/drain/state").json()["marks"]
    assert not mark["applied"] and mark["text"].startswith("would be taken out (observe")
    assert firing(client, "NodeTakenOutByPeerwatch") == []


def test_the_breaker_opens_alerts_and_a_person_resets_it(client: TestClient) -> None:
    act(client, "breaker_trip", host=None, reason="2 more take-outs would pass the limit")
    breaker = client.get("/api/v1/drain/breaker").json()
    assert breaker["open"] and breaker["reason"].startswith("2 more take-outs")
    assert len(firing(client, "DrainBreakerOpen")) == 1
    assert metric_lines(client, "peerwatch_drain_breaker_open{") == [
        'peerwatch_drain_breaker_open{scheduler="slurm"} 1.0']
    assert client.post("/api/v1/drain/breaker/reset",
                       json={"by": "alice"}).status_code == 401
    r = client.post("/api/v1/drain/breaker/reset", headers=credential(client, "drain", "head"),
                    json={"by": "alice"})
    assert r.status_code == 403  # the controller the breaker bounds cannot close it
    r = client.post("/api/v1/drain/breaker/reset", headers=credential(client, "admin", "alice"),
                    json={"by": "mallory", "comment": "two real faults"})
    assert r.status_code == 200 and r.json()["kind"] == "breaker_reset"
    breaker = client.get("/api/v1/drain/breaker").json()
    assert not breaker["open"] and breaker["reset_by"] == "admin:alice"  # not what it said
    r = client.post("/api/v1/drain/breaker/reset", headers=ADMIN, json={"by": "bob"})
    assert r.json()["actor"] == "admin:admin-token (says bob)"  # the shared token: marked
    assert firing(client, "DrainBreakerOpen") == []


def test_bad_actions_are_refused_naming_what_is_wrong(client: TestClient) -> None:
    body = {"scheduler": "slurm", "kind": "take_out", "mode": "act", "reason": "x",
            "actor": "me"}
    assert client.post("/api/v1/actions", json={**body, "host": "n"}).status_code == 401
    r = client.post("/api/v1/actions", headers=ADMIN, json=body)
    assert r.status_code == 422 and "names its host" in r.text
    r = client.post("/api/v1/actions", headers=ADMIN, json={**body, "host": "n",
                                                             "kind": "nuke"})
    assert r.status_code == 422 and "kind" in r.text


def test_the_state_carries_the_stored_verdicts(client: TestClient) -> None:
    r = client.post("/api/v1/reports", headers=probe_headers(),
                    content=sweep("node-a", n=2, down_links=[(1, 0)]).model_dump_json())
    assert r.status_code == 201, r.text
    [node] = client.get("/api/v1/drain/state").json()["nodes"]
    assert node["host"] == "node-a" and node["gpus_total"] == 2
    assert [g["gpu"] for g in node["gpus"]] == [0, 1]
    assert node["maintenance_until"] is None


def test_a_gate_records_about_its_own_node_only(client: TestClient) -> None:
    """A node's gate credential: take-outs of its own node, never another's or the breaker."""
    gate = credential(client, "gate", "GPU-B")
    body = {"scheduler": "slurm", "kind": "take_out", "mode": "act", "reason": "GPU5 down",
            "actor": "peerwatch-gate@gpu-b"}
    r = client.post("/api/v1/actions", headers=gate, json={**body, "host": "gpu-b"})
    assert r.status_code == 201 and r.json()["actor"] == "gate:gpu-b"
    r = client.post("/api/v1/actions", headers=gate, json={**body, "host": "gpu-c"})
    assert r.status_code == 403 and "gate:gpu-b may not speak for host 'gpu-c'" in r.text
    r = client.post("/api/v1/actions", headers=gate, json={**body, "kind": "breaker_trip"})
    assert r.status_code == 403
    r = client.post("/api/v1/drain/breaker/reset", headers=gate, json={"by": "x"})
    assert r.status_code == 403
    probe = credential(client, "probe", "gpu-b")  # a probe's cannot act at all
    assert client.post("/api/v1/actions", headers=probe,
                       json={**body, "host": "gpu-b"}).status_code == 403


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_a_take_out_waiting_for_another_reads_the_mark_it_wrote(client: TestClient) -> None:
    """Two overlapping rounds post the same take-out at once. The later record waits for the
    scheduler's drain lock (`store/locks.py`) before it reads the mark, so it finds the
    earlier one's and answers it again: one take-out, counted once against the breaker.
    Read without the lock, both found no mark and both were counted (PostgreSQL, where the
    wait shows in `pg_stat_activity`)."""
    app: Any = client.app
    sessions = app.state.sessionmaker
    body = ActionIn(host="gpu-b", scheduler="slurm", kind="take_out", mode="act",
                    reason="GPU5 down: all 18 NVLinks down", actor="drain:head")
    seen: dict[str, int] = {}

    def late_round() -> None:
        with sessions() as session:
            seen["id"] = record_action(session, body, datetime.now(UTC)).id

    with sessions() as holder:  # the earlier round's record, mid-way: it holds the lock
        with transaction_lock(holder, drain_lock("slurm")):
            late = threading.Thread(target=late_round)
            late.start()
            assert eventually(lambda: _waiting_on_a_lock(sessions), LIMIT_S), (
                "the record read the marks without waiting for the drain lock")
            first = record_action(holder, body, datetime.now(UTC)).id  # commits
    late.join(timeout=LIMIT_S)
    assert not late.is_alive()
    assert seen["id"] == first
    kinds = [a["kind"] for a in client.get("/api/v1/actions").json()["actions"]]
    assert kinds == ["take_out"]
    assert client.get("/api/v1/drain/breaker").json()["taken_out_in_window"] == 1


def _waiting_on_a_lock(sessions: Any) -> bool:
    with sessions() as session:
        return bool(session.scalar(text(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event_type = 'Lock' AND wait_event = 'advisory'")))
