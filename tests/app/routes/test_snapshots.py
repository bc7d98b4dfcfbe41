"""The job snapshot API on both databases: store (idempotent), list, read, the job's diff
computed by the CLI's own code, every bad input answered with a 4xx naming it, retention."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from peerwatch.app.main import create_app
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.db import make_engine
from peerwatch.app.store.retention import run_maintenance
from peerwatch.app.store.tables.fleet import JobSnapshot
from peerwatch.probes.sim.faults import ErrorGrowth, LinksDown
from peerwatch.probes.sim.simulated import SimulatedFabric
from peerwatch.probes.snapshot import Phase, Snapshot
from peerwatch.probes.snapshot_diff import diff_snapshots
from peerwatch.probes.snapshot_read import take_snapshot
from tests.app.conftest import probe_headers
from tests.app.judged_client import JudgedClient
from tests.probes.fakeclock import FakeClock

HEADERS = {**probe_headers(), "Content-Type": "application/json"}


def job_pair(host: str = "node-a", job: str = "4242") -> tuple[Snapshot, Snapshot]:
    """A prolog and an epilog of one job, during which GPU3 link 5 went down and GPU2 link 4
    replayed."""
    clock = FakeClock()
    fabric = SimulatedFabric("hgx8", hostname=host, clock=clock)
    before = take_snapshot(fabric, job_id=job, phase=Phase.PROLOG)
    fabric.inject(LinksDown(gpu=3, links=(5,)),
                  ErrorGrowth(gpu=2, link=4, counter="replay", per_second=1.0))
    clock.advance(12)
    after = take_snapshot(fabric, job_id=job, phase=Phase.EPILOG)
    return before, after.model_copy(update={"taken_at": before.taken_at + timedelta(minutes=5)})


def post(client: TestClient, body: Snapshot | dict[str, Any] | bytes, **headers: str) -> Any:
    if isinstance(body, Snapshot):
        content = body.model_dump_json().encode()
    elif isinstance(body, dict):
        content = json.dumps(body).encode()
    else:
        content = body
    return client.post("/api/v1/snapshots", content=content, headers={**HEADERS, **headers})


def test_store_list_read_and_diff_a_job(client: TestClient) -> None:
    before, after = job_pair()
    assert post(client, before).status_code == 201
    stored = post(client, after)
    assert stored.status_code == 201, stored.text
    assert stored.json() == {"snapshot_id": str(after.snapshot_id), "host": "node-a",
                             "job_id": "4242", "phase": "epilog", "duplicate": False}
    listed = client.get("/api/v1/hosts/node-a/snapshots").json()
    assert [(s["phase"], s["job_id"], s["gpus"], s["links_down"])
            for s in listed["snapshots"]] == [("epilog", "4242", 8, 1), ("prolog", "4242", 8, 0)]
    whole = client.get(f"/api/v1/snapshots/{after.snapshot_id}")
    assert Snapshot.model_validate(whole.json()) == after
    diff = client.get("/api/v1/hosts/node-a/jobs/4242/diff").json()
    assert [d["text"] for d in diff["changes"]] == [c.text for c in diff_snapshots(before, after)]
    assert diff["changes"][0] == {"severity": "critical", "kind": "link_down",
                                  "text": "GPU3 link 5 went down"}
    assert {"severity": "warning", "kind": "errors_grew",
            "text": "GPU2 link 4 replay errors +12 (0 -> 12)"} in diff["changes"]
    assert diff["before"]["phase"] == "prolog" and diff["after"]["phase"] == "epilog"


def test_a_retry_is_a_duplicate_and_a_reused_id_a_conflict(client: TestClient) -> None:
    before, _ = job_pair()
    assert post(client, before).status_code == 201
    again = post(client, before)
    assert again.status_code == 200 and again.json()["duplicate"] is True
    reused = before.model_copy(update={"job_id": "other"})
    conflict = post(client, reused)
    assert conflict.status_code == 409 and "different body" in conflict.json()["detail"]


def test_unknown_things_are_404s_naming_them(client: TestClient) -> None:
    before, _ = job_pair()
    post(client, before)
    assert "host 'nope' not found" in client.get("/api/v1/hosts/nope/snapshots").json()["detail"]
    missing = client.get("/api/v1/snapshots/00000000-0000-4000-8000-000000000000")
    assert missing.status_code == 404 and "snapshot" in missing.json()["detail"]
    job = client.get("/api/v1/hosts/node-a/jobs/9999/diff")
    assert job.status_code == 404 and "job '9999' not found" in job.json()["detail"]
    half = client.get("/api/v1/hosts/node-a/jobs/4242/diff")
    assert half.status_code == 404 and "epilog snapshot of job '4242'" in half.json()["detail"]
    assert client.get("/api/v1/hosts/nope/jobs/4242/diff").status_code == 404
    assert client.get("/api/v1/snapshots/not-a-uuid").status_code == 422
    assert client.get("/api/v1/hosts/node-a/jobs/a%20b/diff").status_code == 422


def _field(response: Any) -> str:
    return " ".join(".".join(map(str, e["loc"])) + ": " + e["msg"]
                    for e in response.json()["detail"])


@pytest.mark.parametrize(("change", "named"), [
    ({"phase": "during"}, "body.phase"),
    ({"job_id": None}, "needs a job_id"),
    ({"job_id": "../etc"}, "job id"),
    ({"taken_at": "2999-01-01T00:00:00Z"}, "body.taken_at"),
    ({"took_s": -1}, "body.took_s"),
    ({"extra": 1}, "body.extra"),
])
def test_bad_fields_are_422s_naming_the_field(client: TestClient, change: dict[str, Any],
                                              named: str) -> None:
    before, _ = job_pair()
    answer = post(client, before.model_dump(mode="json") | change)
    assert answer.status_code == 422, answer.text
    assert named in _field(answer)


def test_incoherent_snapshots_are_422s(client: TestClient) -> None:
    before, _ = job_pair()
    data = before.model_dump(mode="json")
    data["inventory"]["gpus"][1]["uuid"] = data["inventory"]["gpus"][0]["uuid"]
    assert "duplicate GPU uuid" in _field(post(client, data))
    data = before.model_dump(mode="json")
    data["counters"]["links"][0]["gpu"] = 50
    assert "not in inventory" in _field(post(client, data))
    data = before.model_dump(mode="json")
    data["counters"]["links"][0]["replay"] = 2**70
    assert post(client, data).status_code == 422


def test_hostile_bodies_and_tokens(client: TestClient) -> None:
    before, _ = job_pair()
    assert post(client, before, Authorization="").status_code == 401
    assert post(client, before, Authorization="Bearer wrong").status_code == 403
    assert post(client, b"{not json").status_code == 422
    assert post(client, b"[1, 2]").status_code == 422
    assert post(client, b"\x00\xff").status_code == 422
    assert post(client, b"[" * 100_000 + b"]" * 100_000).status_code in (413, 422)
    newer = post(client, before.model_dump(mode="json") | {"schema_version": 2})
    assert newer.status_code == 400 and "supports [1]" in newer.json()["detail"]


def test_an_oversized_body_is_413(settings: Settings) -> None:
    before, _ = job_pair()
    with JudgedClient(create_app(settings.model_copy(update={"max_body_bytes": 4096}))) as small:
        answer = post(small, before)
    assert answer.status_code == 413 and "PEERWATCH_MAX_BODY_BYTES" in answer.json()["detail"]
    assert answer.json()["detail"].startswith("snapshot body of ")  # not "report body"


def test_old_snapshots_are_pruned_with_the_raw_samples(client: TestClient,
                                                       settings: Settings) -> None:
    now = datetime.now(UTC)
    old, fresh = job_pair(job="1")
    post(client, old.model_copy(update={"taken_at": now - timedelta(days=20)}))
    post(client, fresh.model_copy(update={"taken_at": now - timedelta(days=1)}))
    engine = make_engine(settings)
    try:
        out = run_maintenance(engine, settings, now=now)
        assert out.pruned and out.pruned["job_snapshots"] == 1
        with Session(engine) as session:
            left = session.scalars(select(JobSnapshot.phase)).all()
            assert left == ["epilog"]
            assert session.scalar(select(func.count()).select_from(JobSnapshot)) == 1
    finally:
        engine.dispose()


def test_a_job_only_its_snapshots_name_has_a_page(client: TestClient) -> None:
    """No report's job mapping named job 4242 (it ran before the mapping was set up): its
    page is still there, its GPUs those of its snapshots, so the dashboard can read its diff."""
    assert client.get("/api/v1/jobs/4242").status_code == 404
    before, after = job_pair()
    post(client, before)
    post(client, after)
    page = client.get("/api/v1/jobs/4242").json()
    assert page["hosts"] == ["node-a"]
    assert [(s["gpu"], s["source"]) for s in page["held"]] == [(g, "snapshots") for g in range(8)]
    assert page["first_seen"] == before.taken_at.isoformat().replace("+00:00", "Z")
    assert page["last_seen"] == after.taken_at.isoformat().replace("+00:00", "Z")
