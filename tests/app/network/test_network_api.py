"""Cross-host results end to end on SQLite and PostgreSQL: stored from a report or a pair
job, listed by the test catalogue, judged and triangulated, alerted, and read back."""

from __future__ import annotations

import base64
from datetime import UTC, datetime

from fastapi.testclient import TestClient

from peerwatch.probes.sim.simnet import BadCable, leaf_spine
from tests.app.conftest import credential
from tests.app.factory import sweep
from tests.app.network.fleet import ADMIN, JSON, result, run_pair, run_plan, setup


def test_the_catalogue_lists_the_host_pair_scope(client: TestClient) -> None:
    tests = {t["name"]: t for t in client.get("/api/v1/tests").json()["tests"]}
    assert tests["net_write"]["scope"] == "host_pair"


def test_a_report_with_a_cross_host_result_is_stored_not_refused(client: TestClient) -> None:
    net = leaf_spine(1, 2)
    setup(client, net)
    rep = sweep(host="node-1", at=datetime.now(UTC))
    body = rep.model_dump(mode="json")
    body["schema_version"] = 5
    body["results"].append(result("node-2", 45e9, job="4711"))
    r = client.post("/api/v1/reports", json=body,
                    headers={**credential(client, "probe", "node-1"), **JSON})
    assert r.status_code == 201, r.text
    pairs = client.get("/api/v1/network/pairs", params={"test": "net_write"}).json()["pairs"]
    assert [(p["host"], p["peer_host"], p["measured_bps"]) for p in pairs] == [
        ("node-1", "node-2", 45e9)]
    assert pairs[0]["verdict"] == "healthy" and pairs[0]["expected_bps"] == 50e9 * 0.92
    assert pairs[0]["job"] == "4711"  # the dashboard's cell names the pair job and its time
    at = datetime.fromisoformat(pairs[0]["measured_at"].replace("Z", "+00:00"))
    sent = datetime.fromisoformat(body["results"][-1]["started_at"].replace("Z", "+00:00"))
    assert abs((at.replace(tzinfo=at.tzinfo or UTC) - sent).total_seconds()) < 60


def test_bad_cross_host_results_are_refused_by_name(client: TestClient) -> None:
    body = sweep(host="node-1", at=datetime.now(UTC)).model_dump(mode="json")
    body["results"].append(result("node-2", 45e9))
    r = client.post("/api/v1/reports", json=body, headers={**credential(client, "probe",
                                                                         "node-1"), **JSON})
    assert r.status_code == 422 and "schema_version 5" in r.text
    body["schema_version"] = 5
    body["results"][-1]["peer_host"] = "node-1"
    r = client.post("/api/v1/reports", json=body, headers={**credential(client, "probe",
                                                                         "node-1"), **JSON})
    assert r.status_code == 422 and "is the reporting host" in r.text


def test_a_rank_speaks_only_for_its_own_host(client: TestClient) -> None:
    net = leaf_spine(1, 3)
    setup(client, net)
    drain = credential(client, "drain", "pairs")
    body = {"host": "node-1", "peer_host": "node-2", "scheduler": "slurm"}
    jid = client.post("/api/v1/network/jobs", json=body, headers=drain).json()["id"]
    r = client.post(f"/api/v1/network/jobs/{jid}/ranks", json={"rank": 0, "host": "node-1"},
                    headers=credential(client, "probe", "node-3"))
    assert r.status_code == 403
    r = client.post(f"/api/v1/network/jobs/{jid}/ranks", json={"rank": 0, "host": "node-3"},
                    headers=credential(client, "probe", "node-3"))
    assert r.status_code == 409 and "rank 0 of pair job" in r.text
    r = client.post("/api/v1/network/jobs", json={"host": "node-1", "peer_host": "node-2",
                                                  "scheduler": "slurm"},
                    headers=credential(client, "probe", "node-1"))
    assert r.status_code == 403


def test_a_bad_cable_is_found_alerted_and_left_out_of_placement(client: TestClient) -> None:
    net = leaf_spine(2, 3)
    setup(client, net)
    assert run_plan(client, net) >= 6
    net.faults = [BadCable("node-2")]
    # a scheduled round meets node-2 once: its pair is slow, the other figures of both
    # ends are older, so both are suspects and the planner retests them first
    run_pair(client, net, "node-2", "node-1", 1)
    body = client.get("/api/v1/network/pairs").json()
    assert [(f["kind"], f["subject"]) for f in body["faults"]] == [("path", "node-1~node-2")]
    assert sorted(body["suspects"]) == ["node-1", "node-2"]
    for salt in range(2, 8):
        if not client.get("/api/v1/network/pairs").json()["suspects"]:
            break
        run_plan(client, net, salt=salt, rounds=1)
    body = client.get("/api/v1/network/pairs").json()
    assert body["suspects"] == []
    assert [(f["kind"], f["subject"]) for f in body["faults"]] == [("host", "node-2")]
    assert {p["cause"] for p in body["pairs"] if p["verdict"] != "healthy"} == {"host:node-2"}
    # a host page asks for its own: judged over the fleet, only what names the host sent
    mine = client.get("/api/v1/network/pairs", params={"host": "node-2"}).json()
    assert mine["pairs"] and all("node-2" in (p["host"], p["peer_host"]) for p in mine["pairs"])
    assert [f["subject"] for f in mine["faults"]] == ["node-2"]
    other = client.get("/api/v1/network/pairs", params={"host": "node-5"}).json()
    assert other["faults"] == [] and other["pairs"]
    assert all("node-5" in (p["host"], p["peer_host"]) for p in other["pairs"])
    assert {p["cause"] for p in other["pairs"] if p["verdict"] != "healthy"} <= {"host:node-2"}
    assert client.get("/api/v1/network/pairs", params={"host": "bad host!"}).status_code == 422
    alerts = client.get("/api/v1/alerts").json()["alerts"]
    network = [a for a in alerts if a["labels"]["alertname"].startswith("Network")]
    assert [(a["labels"]["alertname"], a["labels"]["host"]) for a in network] == [
        ("NetworkHostPathSlow", "node-2")]
    nodes = client.get("/api/v1/scheduler/nodes", params={"count": 3}).json()
    assert "node-2" not in [n["host"] for n in nodes["nodes"]]
    assert {n["leaf"] for n in nodes["nodes"]} == {"leaf1"} and "one leaf" in nodes["why"]
    why = {x["host"]: x["why"] for x in nodes["left_out"]}
    assert "NIC, cable or PCIe" in why["node-2"]
    conf = client.get("/api/v1/network/topology.conf").text
    assert "SwitchName=leaf0 Nodes=node-1,node-2,node-3" in conf
    assert "SwitchName=spine0 Switches=leaf0,leaf1" in conf and "# peerwatch: host node-2" in conf
    labels = client.get("/api/v1/network/node-labels").json()
    assert labels["node-2"]["network.peerwatch.io/path"] == "degraded"
    assert labels["node-5"]["network.peerwatch.io/leaf"] == "leaf1"
    # fixed: newer healthy figures resolve the alert
    net.faults = []
    for peer in ("node-1", "node-3", "node-4", "node-5", "node-6"):
        run_pair(client, net, "node-2", peer, 9)
    alerts = client.get("/api/v1/alerts").json()["alerts"]
    assert not [a for a in alerts if a["labels"]["alertname"].startswith("Network")]


def test_the_map_takes_an_admin_and_refuses_duplicates(client: TestClient) -> None:
    hosts = [{"host": "a", "leaf": "l0", "line_rate_bps": 5e10}] * 2
    r = client.put("/api/v1/network/hosts", json={"hosts": hosts}, headers=ADMIN)
    assert r.status_code == 422 and "more than once" in r.text
    r = client.put("/api/v1/network/hosts", json={"hosts": hosts[:1]},
                   headers=credential(client, "probe", "a"))
    assert r.status_code == 403


def test_the_nccl_id_goes_from_rank_0_to_rank_1_and_no_one_else(client: TestClient) -> None:
    """Rank 0's host alone puts it, only while the job runs; the job's two hosts alone read
    it; the job's public answer never shows it; a bad id is refused naming what is wrong."""
    net = leaf_spine(1, 3)
    setup(client, net)
    drain = credential(client, "drain", "pairs")
    jid = client.post("/api/v1/network/jobs", json={"host": "node-1", "peer_host": "node-2",
                                                    "scheduler": "slurm"},
                      headers=drain).json()["id"]
    uid = base64.b64encode(bytes(range(128))).decode()
    path = f"/api/v1/network/jobs/{jid}/rendezvous"
    node = {h: credential(client, "probe", h) for h in ("node-1", "node-2", "node-3")}
    put = {"host": "node-1", "nccl_id": uid}
    r = client.put(path, json=put, headers=node["node-1"])
    assert r.status_code == 409 and "the id goes to a running job" in r.text
    for rank, host in ((0, "node-1"), (1, "node-2")):
        r = client.post(f"/api/v1/network/jobs/{jid}/ranks", json={"rank": rank, "host": host},
                        headers=node[host])
        assert r.status_code == 200, r.text
    r = client.get(path, params={"host": "node-2"}, headers=node["node-2"])
    assert r.status_code == 200 and r.json()["nccl_id"] is None
    assert r.json()["state"] == "running"
    assert client.put(path, json=put, headers=node["node-2"]).status_code == 403
    r = client.put(path, json={"host": "node-2", "nccl_id": uid}, headers=node["node-2"])
    assert r.status_code == 409 and "only rank 0" in r.text
    for bad, words in (("not base64!", "not base64"),
                       (base64.b64encode(bytes(513)).decode(), "at most"),
                       ("", "at least 4")):
        r = client.put(path, json={"host": "node-1", "nccl_id": bad}, headers=node["node-1"])
        assert r.status_code == 422 and "nccl_id" in r.text and words in r.text, (bad, r.text)
    r = client.put(path, json=put, headers=node["node-1"])
    assert r.status_code == 200 and r.json()["nccl_id"] == uid
    for host in ("node-1", "node-2"):
        r = client.get(path, params={"host": host}, headers=node[host])
        assert r.status_code == 200 and r.json()["nccl_id"] == uid
    assert client.get(path, params={"host": "node-2"}, headers=node["node-3"]).status_code == 403
    r = client.get(path, params={"host": "node-3"}, headers=node["node-3"])
    assert r.status_code == 403 and "not a rank of pair job" in r.text
    assert client.get(path, params={"host": "node-1"}).status_code == 401
    public = client.get(f"/api/v1/network/jobs/{jid}").text + client.get(
        "/api/v1/network/jobs").text
    assert uid not in public and "nccl_id" not in public
