"""Cross-host results (`peer_host`, docs/domains.md) are refused with a 422 naming the field
and saying why; nothing of the report is stored. SQLite and PostgreSQL (`client`)."""

from __future__ import annotations

import json

from fastapi.testclient import TestClient

from peerwatch.probes.report import TestName
from peerwatch.probes.sim.simulated import SimulatedFabric
from peerwatch.probes.sweep import SweepOptions, build_report
from tests.app.conftest import probe_headers


def test_a_cross_host_result_is_422_and_the_report_is_not_stored(client: TestClient) -> None:
    fab = SimulatedFabric("nvl72", hostname="nvl72-a-tray01")
    report = json.loads(build_report(fab, options=SweepOptions(
        tests=(TestName.CE_WRITE,))).model_dump_json())
    report["results"][3]["peer_host"] = "nvl72-a-tray02"
    r = client.post("/api/v1/reports", content=json.dumps(report),
                    headers={**probe_headers(), "Content-Type": "application/json"})
    assert r.status_code == 422, r.text
    (error,) = r.json()["detail"]
    assert error["loc"] == ["body", "results", 3, "peer_host"]
    assert error["msg"].startswith("cross-host results are not stored by this server yet")
    assert "nvl72-a-tray02" in error["msg"]
    assert client.get("/api/v1/hosts/nvl72-a-tray01").status_code == 404
