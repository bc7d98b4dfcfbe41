"""Cross-host results (`peer_host`: an NVL72 cross-tray copy, or a `net_write` of a pair
job) are stored as host pairs, not as one of the reporting host's own pairs, and read back
through GET /api/v1/network/pairs (docs/network.md). SQLite and PostgreSQL (`client`)."""

from __future__ import annotations

import json

from fastapi.testclient import TestClient

from peerwatch.probes.report import TestName
from peerwatch.probes.sim.simulated import SimulatedFabric
from peerwatch.probes.sweep import SweepOptions, build_report
from tests.app.conftest import probe_headers


def test_a_cross_host_result_is_stored_as_a_host_pair(client: TestClient) -> None:
    fab = SimulatedFabric("nvl72", hostname="nvl72-a-tray01")
    report = json.loads(build_report(fab, options=SweepOptions(
        tests=(TestName.CE_WRITE,))).model_dump_json())
    cross = report["results"][3]
    cross["peer_host"] = "nvl72-a-tray02"
    r = client.post("/api/v1/reports", content=json.dumps(report),
                    headers={**probe_headers(), "Content-Type": "application/json"})
    assert r.status_code == 201, r.text
    assert client.get("/api/v1/hosts/nvl72-a-tray01").status_code == 200
    pairs = client.get("/api/v1/network/pairs", params={"test": "ce_write"}).json()["pairs"]
    assert [(p["host"], p["peer_host"], p["measured_bps"]) for p in pairs] == [
        ("nvl72-a-tray01", "nvl72-a-tray02", cross["value"])]
    assert pairs[0]["verdict"] == "unknown" and "not on the network map" in pairs[0]["reason"]
    matrix = client.get("/api/v1/hosts/nvl72-a-tray01/matrix",
                        params={"test": "ce_write"}).json()
    assert (cross["src"], cross["dst"]) not in {
        (c["src"], c["dst"]) for c in matrix.get("cells", []) if c.get("value") is not None}


def test_the_same_cross_host_result_twice_is_refused_by_name(client: TestClient) -> None:
    fab = SimulatedFabric("nvl72", hostname="nvl72-a-tray01")
    report = json.loads(build_report(fab, options=SweepOptions(
        tests=(TestName.CE_WRITE,))).model_dump_json())
    for i in (3, 4):
        report["results"][i] |= {"peer_host": "nvl72-a-tray02", "src": 0, "dst": 1}
    r = client.post("/api/v1/reports", content=json.dumps(report),
                    headers={**probe_headers(), "Content-Type": "application/json"})
    assert r.status_code == 422 and "duplicate result" in r.text
