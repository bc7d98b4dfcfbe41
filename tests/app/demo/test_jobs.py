"""The demo's job snapshots: stored through the API's own service, and the job that ran while
the scenario took a link down says so in its diff (through the real API)."""

from __future__ import annotations

from fastapi.testclient import TestClient

from peerwatch.app.demo.fleet import plan_fleet
from peerwatch.app.demo.jobs import DEMO_JOBS, store_demo_jobs
from peerwatch.app.demo.scenario import default_scenario
from peerwatch.probes.report import utcnow


def test_demo_jobs_are_stored_and_the_broken_one_names_its_link(client: TestClient) -> None:
    fleet = plan_fleet(4)
    stored = store_demo_jobs(client.app.state.sessionmaker, fleet,  # type: ignore[attr-defined]
                             default_scenario(fleet), utcnow())
    assert stored == 2 * len(DEMO_JOBS)
    listed = client.get("/api/v1/hosts/hgx8-01/snapshots").json()["snapshots"]
    assert [s["job_id"] for s in listed[:2]] == ["81247", "81247"]
    broken = client.get("/api/v1/hosts/hgx8-01/jobs/81240/diff").json()["changes"]
    assert [c["text"] for c in broken] == ["GPU2 link 7 went down",
                                           "GPU2 link 6 replay errors +288 (0 -> 288)"]
    assert client.get("/api/v1/hosts/hgx8-01/jobs/81231/diff").json()["changes"] == []
    assert client.get("/api/v1/hosts/h200x2-01/jobs/81236/diff").json()["changes"] == []
