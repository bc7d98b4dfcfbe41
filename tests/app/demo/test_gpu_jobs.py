"""The demo's job mapping: written per host as the shipped prolog/epilog write it, read back
by the agent's own reader without a warning, and a backfilled history whose reports carry the
jobs, so a past job's page lists the GPUs it held (through the real API)."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from peerwatch.app.demo.backfill import Backfill, BackfillPlan
from peerwatch.app.demo.fleet import find_host, plan_fleet
from peerwatch.app.demo.gpu_jobs import map_host
from peerwatch.app.demo.scenario import HOUR, default_scenario
from peerwatch.app.runtime.config import Settings
from peerwatch.probes.agent.job_mapping import boot_time, read_job_mapping
from peerwatch.probes.report import utcnow


def _read(d: Path) -> dict[int, list[str]]:
    found = read_job_mapping(d, set(range(8)), boot_time())
    assert found.warnings == []
    out: dict[int, list[str]] = {}
    for j in found.jobs:
        out.setdefault(j.gpu, []).append(j.job)
    return out


def test_the_mapping_follows_the_jobs_through_time(tmp_path: Path) -> None:
    fleet = plan_fleet(4)
    hgx8, h200 = find_host(fleet, "hgx8"), find_host(fleet, "h200x2")
    assert hgx8 is not None and h200 is not None
    d = tmp_path / "hgx8-01"
    map_host(d, fleet, hgx8, -2.0 * HOUR)  # during job 81240: the whole board
    assert _read(d) == {g: ["81240"] for g in range(8)}
    map_host(d, fleet, hgx8, -1.0 * HOUR)  # between jobs: nothing, files gone
    assert _read(d) == {} and list(d.iterdir()) == []
    map_host(d, fleet, hgx8, 120.0)  # live: job 81252 on half the board
    assert _read(d) == {g: ["81252"] for g in range(4)}
    map_host(tmp_path / "h200x2-01", fleet, h200, 120.0)
    assert _read(tmp_path / "h200x2-01") == {0: ["81255"], 1: ["81255"]}


def test_the_backfilled_history_names_its_jobs(client: TestClient, settings: Settings) -> None:
    fleet = plan_fleet(4)
    sessions = client.app.state.sessionmaker  # type: ignore[attr-defined]
    stats = Backfill(fleet, default_scenario(fleet), sessions, settings, utcnow(),
                     BackfillPlan(span_s=3 * HOUR, pause_s=0.0)).run()
    assert stats.done and stats.rejected == 0
    page = client.get("/api/v1/jobs/81240").json()
    assert page["hosts"] == ["hgx8-01"] and [h["gpu"] for h in page["held"]] == list(range(8))
    assert client.get("/api/v1/jobs/81236").json()["hosts"] == ["h200x2-01"]
    assert client.get("/api/v1/jobs/81255").status_code == 404  # live only: not in history
