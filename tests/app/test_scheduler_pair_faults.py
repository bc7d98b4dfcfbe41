"""A pair fault is one page, and both its GPUs stay offerable but never together.

Through the HTTP API on SQLite and PostgreSQL (the `client` fixture): an 8-GPU host whose
copies between GPU2 and GPU5 fail while both work with every other peer (reports built here
with tests/app/factory.py), and one NVL72 tray of the simulator with the same fault between
GPU0 and GPU1. Both ends stay healthy; `/scheduler/hosts` offers both, lists the pair in
`apart` and gives the largest set without it in `cuda_visible_devices`; placement never
returns both (409, saying why, when more are asked than may share a job);
`/scheduler/cliques` offers one end; one PairCopiesFailing pages, and `/metrics` exports the
series its PromQL twin reads.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient

from peerwatch.probes.report import Report, TestName
from peerwatch.probes.sim.faults import PeerCopiesFail
from peerwatch.probes.sim.simulated import SimulatedFabric
from peerwatch.probes.sweep import SweepOptions, build_report
from tests.app.conftest import probe_headers
from tests.app.factory import T0, sweep
from tests.app.metrics_helpers import value

N = 8
HOST = "node-a"
ERROR = "CUDA error: an illegal memory access was encountered"
TOGETHER = [0, 1, 2, 3, 4, 6, 7]  # GPU5 leaves: the lower end of 2-5 stays


def post(client: TestClient, report: Report) -> None:
    r = client.post("/api/v1/reports", content=report.model_dump_json(),
                    headers={**probe_headers(), "Content-Type": "application/json"})
    assert r.status_code == 201, r.text


@pytest.fixture
def faulty(client: TestClient) -> TestClient:
    """node-a: healthy, then two sweeps whose copies between GPU2 and GPU5 fail both ways."""
    post(client, sweep(HOST, n=N, at=T0))
    for i in (1, 2):
        post(client, sweep(HOST, n=N, at=T0 + timedelta(seconds=600 * i),
                           errors={(2, 5): ERROR, (5, 2): ERROR}))
    return client


def hosts(client: TestClient, k: int) -> dict[str, Any]:
    r = client.get("/api/v1/scheduler/hosts", params={"min_healthy_gpus": k})
    assert r.status_code == 200, r.text
    return dict(r.json())


def test_both_ends_are_healthy_and_offered_but_kept_apart(faulty: TestClient) -> None:
    health = faulty.get(f"/api/v1/hosts/{HOST}/health").json()
    assert {g["verdict"] for g in health["gpus"]} == {"healthy"}, health["gpus"]
    pair = next(p for p in health["pairs"] if (p["src"], p["dst"]) == (2, 5))
    assert pair["verdict"] == "down"  # the pair itself is at fault
    (host,) = hosts(faulty, 7)["hosts"]
    assert host["healthy_gpus"] == list(range(N))
    assert host["apart"] == [[2, 5]]
    assert host["cuda_visible_devices"] == ",".join(map(str, TOGETHER))
    body = hosts(faulty, 8)
    assert body["hosts"] == []
    assert body["left_out"][HOST] == ("7 of 8 healthy GPUs may share a job (GPU2 and GPU5 "
                                      "kept apart: a pair fault), 8 asked for")


@pytest.mark.parametrize("pattern", ["ring", "all_to_all"])
def test_placement_never_returns_both_ends(faulty: TestClient, pattern: str) -> None:
    for k in range(2, 8):
        r = faulty.get("/api/v1/scheduler/placement",
                       params={"host": HOST, "gpus": k, "pattern": pattern})
        assert r.status_code == 200, r.text
        body = r.json()
        for chosen in [body["gpus"], *(ru["gpus"] for ru in body["runner_ups"])]:
            assert not {2, 5} <= set(chosen), (k, chosen)
    assert sorted(body["gpus"]) == TOGETHER
    gpu5 = next(e for e in body["excluded"] if e["gpu"] == 5)
    assert gpu5 == {"gpu": 5, "healthy": True,
                    "reason": "GPU5 left out: it must not share a job with GPU2 (a pair fault "
                              "between them; each works with its other peers)"}


def test_more_gpus_than_may_share_a_job_is_a_409_saying_why(faulty: TestClient) -> None:
    r = faulty.get("/api/v1/scheduler/placement", params={"host": HOST, "gpus": 8})
    assert r.status_code == 409, r.text
    detail = r.json()["detail"]
    assert detail["apart"] == [[2, 5]] and detail["largest_set"] == TOGETHER
    assert (detail["healthy"], detail["total"]) == (8, 8)
    assert detail["message"] == (
        "asked for 8 GPUs: 8 of 8 are healthy but GPU2 and GPU5 must not share a job (a pair "
        "fault between them), so at most 7 can (GPU0, GPU1, GPU2, GPU3, GPU4, GPU6, GPU7)")


def test_one_page_for_the_pair_and_its_series_on_metrics(faulty: TestClient) -> None:
    alerts = faulty.get("/api/v1/alerts").json()["alerts"]
    pages = {(a["alertname"], a["labels"].get("gpu"), a["labels"].get("peer_gpu"))
             for a in alerts if a["alertname"] != "ProbeFailing"}
    assert pages == {("PairCopiesFailing", "2", "5")}, pages
    text = faulty.get("/metrics").text
    assert value(text, "peerwatch_pair_fault", host=HOST, gpu="2", peer_gpu="5",
                 kind="copies_fail") == 1
    assert value(text, "peerwatch_pair_fault", host=HOST, gpu="5", peer_gpu="2",
                 kind="copies_fail") is None  # one series per unordered pair
    assert "kind=\"peer_copies\"" not in text  # no GPU is at fault


def test_a_clique_offers_one_end_of_a_pair_fault(client: TestClient) -> None:
    fab = SimulatedFabric("nvl72", seed=1, hostname="rack-a-tray01", rack="rack-a",
                          faults=[PeerCopiesFail(a=0, b=1)])
    options = SweepOptions(tests=(TestName.CE_WRITE,))
    for _ in range(2):
        post(client, build_report(fab, options=options))
    r = client.get("/api/v1/scheduler/cliques", params={"gpus": 3})
    assert r.status_code == 200, r.text
    (fit,) = r.json()["cliques"]
    assert fit["hosts"] == [{"host": "rack-a-tray01", "gpus": [0, 2, 3],
                             "cuda_visible_devices": "0,2,3"}]
    (miss,) = client.get("/api/v1/scheduler/cliques", params={"gpus": 4}).json()["left_out"]
    assert miss["reason"] == ("3 healthy GPUs of 4 that may share a job (GPU0 and GPU1 of "
                              "rack-a-tray01 kept apart: a pair fault), 4 asked for")
