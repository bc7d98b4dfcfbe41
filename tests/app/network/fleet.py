"""A simulated fleet on a leaf/spine network for the network tests: its map posted, each
host's own sweep posted (so the scheduler API calls it healthy), and pair results driven
through the pair-job API exactly as a pair job's ranks do (`peerwatch pairs rank`)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from fastapi.testclient import TestClient

from peerwatch.probes.report import TestName, TransferResult, Unit
from peerwatch.probes.sim.simnet import SimNetwork, network_map
from tests.app.conftest import ADMIN_TOKEN, credential
from tests.app.factory import sweep

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
JSON = {"Content-Type": "application/json"}


def setup(client: TestClient, net: SimNetwork) -> None:
    r = client.put("/api/v1/network/hosts", json={"hosts": network_map(net)}, headers=ADMIN)
    assert r.status_code == 200, r.text
    now = datetime.now(UTC)
    for host in net.hosts:
        rep = sweep(host=host, at=now)
        r = client.post("/api/v1/reports", content=rep.model_dump_json(),
                        headers={**credential(client, "probe", host), **JSON})
        assert r.status_code == 201, r.text


def result(peer: str, value: float, job: str | None = None) -> dict[str, Any]:
    return TransferResult(test=TestName.NET_WRITE, src=0, dst=0, peer_host=peer, value=value,
                          unit=Unit.BYTES_PER_SECOND, job=job,
                          started_at=datetime.now(UTC)).model_dump(mode="json")


def run_pair(client: TestClient, net: SimNetwork, a: str, b: str, salt: int = 0) -> Any:
    """One pair job through the API: created by the controller, both ranks join with their
    own hosts' credentials, rank 0 posts the simulated figure."""
    drain = credential(client, "drain", "pairs-controller")
    job = client.post("/api/v1/network/jobs", json={"host": a, "peer_host": b,
                                                    "scheduler": "slurm"}, headers=drain)
    assert job.status_code == 201, job.text
    jid = job.json()["id"]
    for rank, host in ((0, a), (1, b)):
        r = client.post(f"/api/v1/network/jobs/{jid}/ranks", json={"rank": rank, "host": host},
                        headers=credential(client, "probe", host))
        assert r.status_code == 200, r.text
    assert r.json()["state"] == "running"
    body = {"host": a, "job_id": jid, "results": [result(b, net.measure(a, b, salt))]}
    r = client.post("/api/v1/network/results", json=body,
                    headers=credential(client, "probe", a))
    assert r.status_code == 201, r.text
    return r.json()


def run_plan(client: TestClient, net: SimNetwork, salt: int = 0, rounds: int = 8) -> int:
    """Rounds of the planner's pairs run to completion; how many pairs ran."""
    ran = 0
    for _ in range(rounds):
        plan = client.get("/api/v1/network/plan", params={"max_pairs": 64}).json()["pairs"]
        if not plan:
            break
        for p in plan:
            run_pair(client, net, p["host"], p["peer_host"], salt)
            ran += 1
    return ran
