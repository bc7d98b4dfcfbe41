"""The scheduler endpoints end to end: simulated fabric -> probe report -> POST -> placement.

Runs on SQLite and PostgreSQL (the `client` fixture of tests/app/conftest.py). Reports are
whole probe passes built by `probes.sweep.build_report` on the simulated presets, limited to
`ce_write` so a sweep stays quick.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient

from peerwatch.probes.report import Report, TestName
from peerwatch.probes.sim.faults import LinksDown
from peerwatch.probes.sim.simulated import SimulatedFabric
from peerwatch.probes.sweep import SweepOptions, build_report
from tests.app.conftest import judge_later, probe_headers

CE_ONLY = SweepOptions(tests=(TestName.CE_WRITE,))


def report(preset: str, *faults: Any, host: str | None = None, at: datetime | None = None,
           seed: int = 5) -> Report:
    fab = SimulatedFabric(preset, seed=seed, faults=faults, hostname=host)
    if at is None:
        return build_report(fab, options=CE_ONLY)
    return build_report(fab, options=CE_ONLY, now=lambda: at)


def post(client: TestClient, rep: Report) -> None:
    r = client.post("/api/v1/reports", content=rep.model_dump_json(),
                    headers={**probe_headers(), "Content-Type": "application/json"})
    assert r.status_code == 201, r.text


def placement(client: TestClient, host: str, k: int, pattern: str = "ring") -> Any:
    return client.get("/api/v1/scheduler/placement",
                      params={"host": host, "gpus": k, "pattern": pattern})


def test_hgx8_gpu_with_links_cut_is_never_chosen(client: TestClient) -> None:
    post(client, report("hgx8", LinksDown(gpu=5, count=18), host="hgx-cut"))
    for pattern in ("ring", "all_to_all"):
        for k in range(1, 8):
            r = placement(client, "hgx-cut", k, pattern)
            assert r.status_code == 200, r.text
            body = r.json()
            assert 5 not in body["gpus"], (pattern, k, body["gpus"])
            assert all(5 not in ru["gpus"] for ru in body["runner_ups"])
            assert body["cuda_visible_devices"] == ",".join(map(str, body["gpus"]))
            gpu5 = next(e for e in body["excluded"] if e["gpu"] == 5)
            assert gpu5["healthy"] is False and "GPU5" in gpu5["reason"]
            assert "NVLinks down" in gpu5["reason"]


def test_hgx8_ring_of_four_predicts_nvlink_bus_bandwidth(client: TestClient) -> None:
    post(client, report("hgx8", host="hgx-ok"))
    body = placement(client, "hgx-ok", 4).json()
    assert body["gpus"] == [0, 1, 2, 3] and body["exact"] is True
    # NV18 x 26.562 GB/s x 0.83 CE, x 0.69/0.83 for all-reduce: ~330 GB/s bus bandwidth
    assert 300e9 < body["predicted_bps"] < 345e9
    assert body["measured_at"] is not None and body["warnings"] == []
    assert body["cuda_visible_devices_uuid"].count("GPU-") == 4
    assert len(body["runner_ups"]) == 3


def test_too_many_gpus_is_409_with_the_numbers(client: TestClient) -> None:
    post(client, report("hgx8", LinksDown(gpu=5, count=18), host="hgx-cut"))
    r = placement(client, "hgx-cut", 8)
    assert r.status_code == 409, r.text
    detail = r.json()["detail"]
    assert (detail["requested"], detail["healthy"], detail["total"]) == (8, 7, 8)
    assert detail["healthy_gpus"] == [0, 1, 2, 3, 4, 6, 7]
    assert "only 7 of 8 are healthy" in detail["message"]


def test_mesh4_ring_through_the_api_follows_the_nvlinks(client: TestClient) -> None:
    post(client, report("mesh4", host="mesh"))
    assert placement(client, "mesh", 4).json()["gpus"] == [0, 1, 3, 2]
    pair = placement(client, "mesh", 2).json()["gpus"]
    assert set(pair) not in ({0, 3}, {1, 2})


@pytest.mark.parametrize(
    ("params", "status", "needle"),
    [
        ({"host": "nope", "gpus": 2}, 404, "nope"),
        ({"host": "hgx-ok", "gpus": 0}, 422, "gpus"),
        ({"host": "hgx-ok", "gpus": 2, "pattern": "tree"}, 422, "pattern"),
        ({"gpus": 2}, 422, "host"),
    ],
)
def test_bad_requests_name_what_was_wrong(client: TestClient, params: dict[str, Any],
                                          status: int, needle: str) -> None:
    post(client, report("h200x2", host="hgx-ok"))
    r = client.get("/api/v1/scheduler/placement", params=params)
    assert r.status_code == status, r.text
    assert needle in r.text


def test_scheduler_hosts_lists_fresh_hosts_with_enough_healthy_gpus(client: TestClient) -> None:
    post(client, report("h200x2", host="old", at=datetime.now(UTC) - timedelta(days=1)))
    judge_later(client, 1800)  # the server's periodic round, half an hour on
    post(client, report("hgx8", LinksDown(gpu=5, count=18), host="hgx-cut"))
    post(client, report("hgx8", host="hgx-ok"))

    body = client.get("/api/v1/scheduler/hosts", params={"min_healthy_gpus": 8}).json()
    assert [h["host"] for h in body["hosts"]] == ["hgx-ok"]
    assert body["hosts"][0]["cuda_visible_devices"] == "0,1,2,3,4,5,6,7"
    assert "7 healthy GPUs of 8" in body["left_out"]["hgx-cut"]
    assert body["left_out"]["old"].startswith("stale")

    four = client.get("/api/v1/scheduler/hosts", params={"min_healthy_gpus": 4}).json()
    cut = next(h for h in four["hosts"] if h["host"] == "hgx-cut")
    assert cut["healthy_gpus"] == [0, 1, 2, 3, 4, 6, 7]
    assert [(u["gpu"], u["verdict"]) for u in cut["unhealthy"]] == [(5, "down")]
    assert client.get("/api/v1/scheduler/hosts",
                      params={"min_healthy_gpus": 0}).status_code == 422


def test_placement_on_a_stale_host_answers_but_warns(client: TestClient) -> None:
    post(client, report("h200x2", host="old", at=datetime.now(UTC) - timedelta(days=1)))
    judge_later(client, 3600)
    body = placement(client, "old", 2).json()
    assert body["gpus"] == [0, 1]
    assert body["warnings"][0].startswith("host is stale")


def test_scheduler_answers_say_when_the_host_was_judged(client: TestClient) -> None:
    """Both answers carry the stored judgement's time, as every host-scoped answer does."""
    post(client, report("hgx8", host="hgx-ok"))
    judged = client.get("/api/v1/hosts/hgx-ok/health").json()["judged_at"]
    assert judged is not None
    hosts = client.get("/api/v1/scheduler/hosts", params={"min_healthy_gpus": 8}).json()
    assert [(h["host"], h["judged_at"]) for h in hosts["hosts"]] == [("hgx-ok", judged)]
    assert placement(client, "hgx-ok", 4).json()["judged_at"] == judged


def test_openapi_lists_the_scheduler_endpoints_with_examples(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    assert {"/api/v1/scheduler/hosts", "/api/v1/scheduler/placement"} <= set(spec["paths"])
    schemas = spec["components"]["schemas"]
    assert schemas["PlacementResponse"]["examples"][0]["gpus"] == [0, 1, 2, 3]
    assert schemas["SchedulerHostsResponse"]["examples"]
    assert "409" in spec["paths"]["/api/v1/scheduler/placement"]["get"]["responses"]
