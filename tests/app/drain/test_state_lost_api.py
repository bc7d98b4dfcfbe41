"""The drain breaker's state on the server, on SQLite and PostgreSQL: it is known from the
first action on a scheduler (a server without it lost peerwatch's state), a trip for a lost
state pages in any mode and holds until a person resets it, a reset on a fresh server makes
the state known, and an adopted mark says so."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.app.drain.test_api import ADMIN, act, firing


def breaker(client: TestClient, scheduler: str = "slurm") -> dict:
    return client.get("/api/v1/drain/breaker", params={"scheduler": scheduler}).json()


def test_the_state_is_known_from_the_first_action(client: TestClient) -> None:
    assert breaker(client)["known"] is False
    act(client, "recovering", mode="observe")
    b = breaker(client)
    assert b["known"] is True and b["open"] is False and b["cause"] is None
    assert breaker(client, "kubernetes")["known"] is False  # per scheduler


def test_a_lost_state_trips_pages_in_any_mode_and_a_person_resets_it(
        client: TestClient) -> None:
    r = client.post("/api/v1/actions", headers=ADMIN, json={
        "host": None, "scheduler": "slurm", "kind": "breaker_trip", "mode": "observe",
        "reason": "the server has no record of peerwatch's drains", "actor": "drain@head",
        "details": {"cause": "state_lost", "nodes": ["gpu-b"]}})
    assert r.status_code == 201, r.text
    b = breaker(client)
    assert b["open"] and b["cause"] == "state_lost" and b["known"]
    assert len(firing(client, "DrainBreakerOpen")) == 1  # observe mode too: state was lost
    state = client.get("/api/v1/drain/state", params={"mode": "act"}).json()
    assert state["breaker"]["cause"] == "state_lost"
    r = client.post("/api/v1/drain/breaker/reset", headers=ADMIN,
                    json={"by": "alice", "comment": "checked gpu-b: GPU4 still gone"})
    assert r.status_code == 200 and r.json()["details"] == {"was_open": True,
                                                            "cause": "state_lost"}
    b = breaker(client)
    assert not b["open"] and b["cause"] is None and firing(client, "DrainBreakerOpen") == []


def test_a_reset_on_a_fresh_server_makes_the_state_known(client: TestClient) -> None:
    r = client.post("/api/v1/drain/breaker/reset", headers=ADMIN,
                    json={"by": "alice", "comment": "db restored; scheduler checked"})
    assert r.status_code == 200 and r.json()["details"] == {"was_open": False}
    assert breaker(client)["known"] is True


def test_an_adopted_mark_says_so(client: TestClient) -> None:
    act(client, "adopt", reason="peerwatch: GPU4 missing")
    act(client, "take_out", host="gpu-c")
    marks = {m["host"]: m for m in client.get("/api/v1/drain/state").json()["marks"]}
    assert marks["gpu-b"]["adopted"] is True and marks["gpu-c"]["adopted"] is False
