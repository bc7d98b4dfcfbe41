"""Fabric faults of simulated hosts, reported and ingested, judged in `/health` with their
contradiction and action (SQLite and PostgreSQL); a 12-of-18 SKU is healthy by design; a
report of an older probe (no fabric manager, no health mask, no start times) still goes in."""

from __future__ import annotations

from datetime import UTC, datetime

from fastapi.testclient import TestClient

from peerwatch.probes.report import Report, ReportKind, TestName
from peerwatch.probes.sim.faults import FabricManagerDown, FabricNotCompleted, Fault, PeerCopiesFail
from peerwatch.probes.sim.simulated import SimulatedFabric
from peerwatch.probes.sweep import SweepOptions, build_report
from tests.app.conftest import probe_headers

QUICK = SweepOptions(tests=(TestName.CE_WRITE, TestName.STAGED), timeout_s=None)


def post(client: TestClient, preset: str, name: str, *faults: Fault,
         kind: ReportKind = ReportKind.SWEEP) -> Report:
    fabric = SimulatedFabric(preset, hostname=name, faults=faults)
    report = build_report(fabric, kind, QUICK, now=lambda: datetime.now(UTC))
    answer = client.post("/api/v1/reports", content=report.model_dump_json(),
                         headers={**probe_headers(), "Content-Type": "application/json"})
    assert answer.status_code in (200, 201), answer.text
    return report


def health(client: TestClient, name: str) -> dict:
    return client.get(f"/api/v1/hosts/{name}/health").json()


def test_fabric_not_completed_and_manager_down(client: TestClient) -> None:
    post(client, "hgx8", "fab-1", FabricNotCompleted(state="in_progress", gpu=2),
         FabricManagerDown())
    h = health(client, "fab-1")
    gpus = {g["gpu"]: g for g in h["gpus"]}
    assert gpus[2]["verdict"] == "degraded"
    assert "fabric not COMPLETED (in_progress): P2P cannot be trusted" in gpus[2]["reason"]
    assert h["verdict"] == "degraded"


def test_fabric_manager_down_alone_degrades_the_host(client: TestClient) -> None:
    post(client, "h200x2", "fab-2", FabricManagerDown())
    h = health(client, "fab-2")
    assert all(g["verdict"] == "healthy" for g in h["gpus"])
    assert h["verdict"] == "degraded" and "Fabric Manager not running" in h["reason"]


def test_peer_copies_fail_behind_a_completed_fabric(client: TestClient) -> None:
    post(client, "h200x2", "fab-3", PeerCopiesFail(a=0, b=1))
    h = health(client, "fab-3")
    gpus = h["gpus"]
    # the one pair of a 2-GPU board is a pair fault: the pair is at fault, both
    # ends stay healthy, kept apart (PairCopiesFailing pages it); with no other peer to
    # compare, the text says it cannot tell it from a GPU fault
    assert all(g["verdict"] == "healthy" for g in gpus), gpus
    assert "kept apart from GPU1 (a pair fault: no other peer measured to tell it from a " \
        "GPU fault)" in gpus[0]["reason"]
    assert {p["verdict"] for p in h["pairs"]} <= {"degraded", "down"}
    assert h["verdict"] == "degraded"


def test_twelve_of_eighteen_is_healthy_by_design(client: TestClient) -> None:
    post(client, "h100nvl2", "nvl-1")
    h = health(client, "nvl-1")
    assert h["verdict"] == "healthy", h["reason"]
    assert len(h["links"]) == 36
    assert sum("not wired (by design" in x["reason"] for x in h["links"]) == 12


def test_a_report_of_an_older_probe_still_goes_in(client: TestClient) -> None:
    report = post(client, "h200x2", "old-1", kind=ReportKind.INVENTORY)
    old = report.model_dump(mode="json", exclude={"report_id"})
    old["inventory"].pop("fabric_manager")
    for key in ("probe_started_at", "driver_loaded_at"):
        old["host"].pop(key)
    for gpu in old["inventory"]["gpus"]:
        for key in ("health_mask", "health_issues", "source"):
            gpu["switch_fabric"].pop(key)
    answer = client.post("/api/v1/reports", json=old, headers=probe_headers())
    assert answer.status_code in (200, 201), answer.text
    assert health(client, "old-1")["verdict"] in ("healthy", "unknown")


def test_fabric_manager_going_down_on_a_healthy_host_is_judged(client: TestClient) -> None:
    """Only the Fabric Manager changes between two reports: the host is judged again."""
    post(client, "h200x2", "fab-4")
    assert health(client, "fab-4")["verdict"] == "healthy"
    post(client, "h200x2", "fab-4", FabricManagerDown(), kind=ReportKind.INVENTORY)
    h = health(client, "fab-4")
    assert h["verdict"] == "degraded" and "Fabric Manager not running" in h["reason"]
