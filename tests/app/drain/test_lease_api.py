"""The drain lease on SQLite and PostgreSQL: one holder per scheduler, renewed by its holder,
taken over once it lapsed, given back on release, shown in /drain/state; bad input is a 422
naming the field, and taking it needs the admin token."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from fastapi.testclient import TestClient
from sqlalchemy import update

from peerwatch.app.store.tables.drain_lease import DrainLease
from tests.app.conftest import ADMIN_TOKEN

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}


def take(client: TestClient, holder: str, scheduler: str = "slurm", ttl_s: float = 60) -> dict:
    r = client.post("/api/v1/drain/lease", headers=ADMIN,
                    json={"scheduler": scheduler, "holder": holder, "ttl_s": ttl_s})
    assert r.status_code == 200, r.text
    return r.json()


def lapse(client: TestClient, scheduler: str = "slurm") -> None:
    with client.app.state.sessionmaker() as session:  # type: ignore[attr-defined]
        session.execute(update(DrainLease).where(DrainLease.scheduler == scheduler).values(
            expires_at=datetime.now(UTC) - timedelta(seconds=1)))
        session.commit()


def test_one_holder_per_scheduler_until_it_lapses_or_is_released(client: TestClient) -> None:
    first = take(client, "head-a:11")
    assert first["held"] and first["holder"] == "head-a:11"
    other = take(client, "head-b:22")
    assert not other["held"] and other["holder"] == "head-a:11"
    assert other["expires_at"] == first["expires_at"]
    assert take(client, "head-b:22", scheduler="kubernetes")["held"]  # per scheduler
    renewed = take(client, "head-a:11")
    assert renewed["held"] and renewed["acquired_at"] == first["acquired_at"]
    state = client.get("/api/v1/drain/state").json()["lease"]
    assert state["holder"] == "head-a:11" and not state["held"]  # nobody asked: not held

    lapse(client)
    assert client.get("/api/v1/drain/lease").json()["holder"] is None
    taken = take(client, "head-b:22")
    assert taken["held"] and taken["acquired_at"] != first["acquired_at"]
    assert not take(client, "head-a:11")["held"]

    r = client.post("/api/v1/drain/lease/release", headers=ADMIN,
                    json={"scheduler": "slurm", "holder": "head-a:11"})  # not its own: kept
    assert r.status_code == 200 and r.json()["holder"] == "head-b:22"
    client.post("/api/v1/drain/lease/release", headers=ADMIN,
                json={"scheduler": "slurm", "holder": "head-b:22"})
    assert take(client, "head-a:11")["held"]


def test_bad_lease_requests_are_refused_with_the_field_named(client: TestClient) -> None:
    r = client.post("/api/v1/drain/lease", json={"holder": "a:1", "ttl_s": 30})
    assert r.status_code == 401
    for body, field in (({"holder": "a:1", "ttl_s": 0}, "ttl_s"),
                        ({"holder": "", "ttl_s": 30}, "holder"),
                        ({"holder": "has space", "ttl_s": 30}, "holder"),
                        ({"holder": "a:1", "ttl_s": 30, "scheduler": "Slurm!"}, "scheduler")):
        r = client.post("/api/v1/drain/lease", headers=ADMIN, json=body)
        assert r.status_code == 422 and field in r.text, (body, r.text)
