"""Attribution by pattern, with the driver's word: a pair whose copies fail while
one end logged a P2P-class Xid is explained by that GPU, where no pattern can tell.

Through the HTTP API on SQLite and PostgreSQL (the `client` fixture), reports built here
(tests/app/factory.py) with their events and job holders, the newest within the last hour
(events older than the judge's look-back are history only):
- a 2-GPU board failing both ways, GPU1 logging Xid 48: GPU1 is the fault, XidFault its one
  page, no PairCopiesFailing; /health's cause names the Xid and the job, the scheduler keeps
  GPU0 (no `apart`), /metrics exports no pair fault;
- an 8-GPU board whose GPU3 fails with one peer so far, after one Xid 94 (warning level);
- both ends with Xids, or an application's Xid: a pair fault (PairCopiesFailing, `apart`),
  its text saying why, and naming the job.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from fastapi.testclient import TestClient

from peerwatch.probes.report import EventKind, EventSource, FabricEvent, GpuJob, Report, utcnow
from tests.app.conftest import probe_headers
from tests.app.factory import sweep
from tests.app.metrics_helpers import value

HOST = "node-a"
ERROR = "CUDA error: an illegal memory access was encountered"


def post(client: TestClient, report: Report) -> None:
    r = client.post("/api/v1/reports", content=report.model_dump_json(),
                    headers={**probe_headers(), "Content-Type": "application/json"})
    assert r.status_code == 201, r.text


def xid(code: int, gpu: int, at: Any) -> FabricEvent:
    return FabricEvent(kind=EventKind.XID, code=code, at=at, gpu=gpu, sources=[EventSource.KMSG],
                       message=f"NVRM: Xid (PCI:0000:{0x19 + gpu:02x}:00): {code}, pid=1")


def run(client: TestClient, n: int, failing: list[tuple[int, int]],
        events: list[tuple[int, int]]) -> None:
    """Healthy, then two sweeps 10 min apart whose copies fail both ways between each pair
    of `failing`; the second carries the (code, gpu) Xids of `events` (5 min ago: inside
    a warning's 10-min catalog window, so its XidWarning pages). Job 4711 holds every GPU
    throughout."""
    start = utcnow() - timedelta(minutes=25)
    jobs = [GpuJob(gpu=g, job="4711") for g in range(n)]
    errors = {k: ERROR for a, b in failing for k in ((a, b), (b, a))}
    for i in range(3):
        at = start + timedelta(minutes=10 * i)
        report = sweep(HOST, n=n, at=at, errors=errors if i else None)
        logged = [xid(c, g, at + timedelta(seconds=1)) for c, g in events] if i == 2 else []
        post(client, report.model_copy(update={"jobs": jobs, "events": logged}))


def health(client: TestClient) -> dict[str, Any]:
    return dict(client.get(f"/api/v1/hosts/{HOST}/health").json())


def pages(client: TestClient) -> set[tuple[str, str | None, str | None]]:
    return {(a["alertname"], a["labels"].get("gpu"), a["labels"].get("peer_gpu"))
            for a in client.get("/api/v1/alerts").json()["alerts"]
            if a["alertname"] != "ProbeFailing"}


def scheduler(client: TestClient) -> dict[str, Any]:
    (host,) = client.get("/api/v1/scheduler/hosts",
                         params={"min_healthy_gpus": 1}).json()["hosts"]
    return dict(host)


def test_a_two_gpu_board_with_an_xid_blames_that_gpu_alone(client: TestClient) -> None:
    run(client, 2, [(0, 1)], [(48, 1)])
    body = health(client)
    for p in body["pairs"]:
        assert (p["verdict"], p["explained_by"]) == ("down", 1), p
        assert p["cause"].startswith("GPU1: Xid 48 at ") and "(Double-bit ECC error)" in \
            p["cause"], p["cause"]
        assert p["cause"].endswith(", during job 4711")
        assert "explained by GPU1: Xid 48" in p["reason"]
    gpus = {g["gpu"]: g for g in body["gpus"]}
    assert gpus[0]["verdict"] == "healthy", gpus[0]["reason"]
    assert gpus[1]["verdict"] == "down"
    assert "copies fail with GPU0 after Xid 48" in gpus[1]["reason"]
    assert pages(client) == {("XidFault", "1", None)}  # the GPU's page, not the pair's
    host = scheduler(client)
    assert (host["healthy_gpus"], host["apart"], host["cuda_visible_devices"]) == ([0], [], "0")
    text = client.get("/metrics").text
    assert "peerwatch_pair_fault{" not in text
    assert value(text, "peerwatch_fabric_event_findings", host=HOST, gpu="1", link="",
                 switch="", xid="xid48", level="fault") == 1  # the recording rule's input


def test_one_bad_peer_so_far_and_a_warning_level_xid_blames_the_gpu(
        client: TestClient) -> None:
    run(client, 8, [(3, 5)], [(94, 3)])  # Xid 94 once: below its threshold of 3
    body = health(client)
    pair = next(p for p in body["pairs"] if (p["src"], p["dst"]) == (5, 3))
    assert pair["explained_by"] == 3 and "Xid 94" in pair["cause"]
    gpus = {g["gpu"]: g["verdict"] for g in body["gpus"]}
    assert gpus.pop(3) == "down" and set(gpus.values()) == {"healthy"}
    assert pages(client) == {("XidWarning", "3", None)}
    host = scheduler(client)
    assert host["healthy_gpus"] == [0, 1, 2, 4, 5, 6, 7] and host["apart"] == []


def test_both_ends_with_xids_stay_a_pair_fault_and_say_so(client: TestClient) -> None:
    run(client, 8, [(2, 5)], [(94, 2), (94, 5)])
    pair = next(p for p in health(client)["pairs"] if (p["src"], p["dst"]) == (2, 5))
    assert pair["explained_by"] is None
    assert "not blamed on either GPU: both logged Xids then (GPU2 Xid 94; GPU5 Xid 94)" in \
        pair["reason"]
    assert ("PairCopiesFailing", "2", "5") in pages(client)


def test_an_application_xid_leaves_a_pair_fault_that_names_its_job(client: TestClient) -> None:
    run(client, 8, [(2, 5)], [(13, 2)])
    pair = next(p for p in health(client)["pairs"] if (p["src"], p["dst"]) == (2, 5))
    assert pair["explained_by"] is None and "says nothing about P2P: a pair fault" in \
        pair["reason"]
    assert "during job 4711" in pair["reason"]
    assert pages(client) == {("PairCopiesFailing", "2", "5")}  # Xid 13 is info: no page
    alert = next(a for a in client.get("/api/v1/alerts").json()["alerts"]
                 if a["alertname"] == "PairCopiesFailing")
    assert "during job 4711" in alert["annotations"]["description"]
    assert scheduler(client)["apart"] == [[2, 5]]
