"""NVLink domains end to end: simulated NVL72 trays -> probe reports -> POST -> the domain
and clique-scheduler APIs, on SQLite and PostgreSQL (the `client` fixture).

Reports are whole probe passes of `probes.sweep.build_report`, limited to `ce_write` so a
sweep of a tray stays quick; every verdict the APIs count was judged at ingest.
"""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from peerwatch.probes.report import ReportKind, TestName
from peerwatch.probes.sim.faults import (
    CliqueMoved,
    FabricNotCompleted,
    Fault,
    InsufficientNvlinks,
    SwitchTrayLost,
)
from peerwatch.probes.sim.presets import rack_cluster_uuid
from peerwatch.probes.sim.simulated import SimulatedFabric
from peerwatch.probes.sweep import SweepOptions, build_report
from tests.app.conftest import judge_later, probe_headers

CE_ONLY = SweepOptions(tests=(TestName.CE_WRITE,))
RACK = "rack-a"
DOMAIN = rack_cluster_uuid(RACK)


def tray_name(n: int, rack: str = RACK) -> str:
    return f"{rack}-tray{n:02d}"


def post_tray(client: TestClient, n: int, *faults: Fault, rack: str = RACK) -> None:
    fab = SimulatedFabric("nvl72", seed=n, hostname=tray_name(n, rack), rack=rack,
                          faults=faults)
    post(client, build_report(fab, options=CE_ONLY).model_dump_json())


def post(client: TestClient, body: str) -> None:
    r = client.post("/api/v1/reports", content=body,
                    headers={**probe_headers(), "Content-Type": "application/json"})
    assert r.status_code == 201, r.text


def domains(client: TestClient) -> list[dict[str, Any]]:
    r = client.get("/api/v1/domains")
    assert r.status_code == 200, r.text
    return list(r.json()["domains"])


def detail(client: TestClient, domain: str = DOMAIN) -> dict[str, Any]:
    r = client.get(f"/api/v1/domains/{domain}")
    assert r.status_code == 200, r.text
    return dict(r.json())


def post_faulty_rack(client: TestClient) -> None:
    """Six trays: 2 has GPU1 short of NVLinks, 4 sits in clique 2, 6 is stuck IN_PROGRESS."""
    faults: dict[int, tuple[Fault, ...]] = {
        2: (InsufficientNvlinks(gpu=1),), 4: (CliqueMoved(clique_id=2),),
        6: (FabricNotCompleted(state="in_progress"),)}
    for n in range(1, 7):
        post_tray(client, n, *faults.get(n, ()))


def test_a_healthy_rack_is_one_domain_in_one_clique(client: TestClient) -> None:
    for n in range(1, 4):
        post_tray(client, n)
    post_tray(client, 1, rack="rack-b")
    post(client, build_report(SimulatedFabric("hgx8", hostname="hgx-1"),
                              options=CE_ONLY).model_dump_json())  # no domain: zero UUID
    found = {d["id"]: d for d in domains(client)}
    assert set(found) == {DOMAIN, rack_cluster_uuid("rack-b")}
    a = found[DOMAIN]
    assert (a["verdict"], a["tray_count"], a["gpu_count"]) == ("healthy", 3, 12)
    assert a["hosts"] == [tray_name(n) for n in (1, 2, 3)]
    assert a["cliques"] == [{"clique_id": 1, "hosts": a["hosts"], "gpus": 12,
                             "healthy_gpus": 12, "job_span": a["hosts"]}]
    assert a["fabric_states"] == {"completed": 12} and a["fabric_health"] == {"healthy": 12}
    assert a["reason"] == "3 trays, 12 GPUs in clique 1, fabric COMPLETED and healthy"
    assert (a["largest_healthy_clique"], a["job_span"]) == (1, a["hosts"])


def test_faults_show_in_the_roll_up_and_in_the_trays(client: TestClient) -> None:
    post_faulty_rack(client)
    (d,) = domains(client)
    assert d["verdict"] == "degraded"
    assert d["fabric_states"] == {"completed": 20, "in_progress": 4}
    assert d["fabric_health"] == {"healthy": 23, "unhealthy": 1}
    cliques = {c["clique_id"]: c for c in d["cliques"]}
    assert cliques[1]["gpus"] == 20 and cliques[2]["hosts"] == [tray_name(4)]
    assert cliques[1]["job_span"] == [tray_name(n) for n in (1, 3, 5)]
    assert cliques[1]["healthy_gpus"] == 4 * 3 + 3  # tray 2 keeps 3, tray 6 none
    assert (d["largest_healthy_clique"], d["job_span"]) == (1, cliques[1]["job_span"])
    for words in ("5 of 24 GPUs not healthy", f"{tray_name(2)} GPU1 degraded",
                  "fabric not COMPLETED on 4 GPUs (in_progress)",
                  "fabric health unhealthy on 1 GPU", "split into 2 cliques: 1 (20 GPUs), "
                  "2 (4 GPUs)", "a job may span 3 healthy trays of clique 1"):
        assert words in d["reason"], (words, d["reason"])
    trays = {t["host"]: t for t in detail(client)["trays"]}
    assert list(trays) == [tray_name(n) for n in range(1, 7)]
    gpu1 = trays[tray_name(2)]["gpus"][1]
    assert (gpu1["health"], gpu1["verdict"]) == ("unhealthy", "degraded")
    assert gpu1["health_issues"] == ["incorrect_configuration:insufficient_nvlinks"]
    assert "insufficient_nvlinks" in gpu1["reason"] and "8/18 NVLinks up" in gpu1["reason"]
    assert {g["state"] for g in trays[tray_name(6)]["gpus"]} == {"in_progress"}
    assert {g["clique_id"] for g in trays[tray_name(4)]["gpus"]} == {2}
    assert trays[tray_name(6)]["verdict"] == "degraded"


def test_a_lost_switch_tray_leaves_the_rack_at_limited_capacity(client: TestClient) -> None:
    for n in range(1, 4):
        post_tray(client, n, SwitchTrayLost(tray=4))
    (d,) = domains(client)
    assert d["verdict"] == "degraded" and d["fabric_health"] == {"limited_capacity": 12}
    assert d["job_span"] == [] and d["largest_healthy_clique"] is None
    assert "no tray of any clique is wholly healthy" in d["reason"]
    gpu = detail(client)["trays"][0]["gpus"][0]
    assert gpu["health_issues"] == ["degraded_bandwidth"] and "16/18 NVLinks up" in gpu["reason"]


def test_a_silent_tray_turns_stale_and_leaves_the_job_span(client: TestClient) -> None:
    for n in (1, 2):
        post_tray(client, n)
    judge_later(client, 3600)  # nobody reported for an hour: every tray stale
    (d,) = domains(client)
    assert d["verdict"] == "unknown" and d["job_span"] == []
    assert d["reason"] == "2 trays, 8 GPUs: no tray reporting (every one stale or not judged)"
    post_tray(client, 1)  # tray 1 reports again; tray 2 stays stale
    (d,) = domains(client)
    assert d["verdict"] == "degraded" and d["job_span"] == [tray_name(1)]
    assert f"1 of 2 trays stale or not judged ({tray_name(2)})" in d["reason"]


def test_trays_not_measured_yet_are_unknown_never_healthy(client: TestClient) -> None:
    for n in (1, 2):
        fab = SimulatedFabric("nvl72", hostname=tray_name(n), rack=RACK)
        post(client, build_report(fab, ReportKind.INVENTORY).model_dump_json())
    (d,) = domains(client)
    assert d["verdict"] == "unknown"
    assert d["reason"] == (f"2 trays, 8 GPUs: 2 trays not measured yet ({tray_name(1)}; "
                           f"{tray_name(2)}); a job may span 2 healthy trays of clique 1")
    assert d["job_span"] == [tray_name(1), tray_name(2)]  # GPUs healthy, as /scheduler/hosts


def test_domain_ids_are_read_with_or_without_dashes(client: TestClient) -> None:
    post_tray(client, 1)
    dashed = "-".join((DOMAIN[:8], DOMAIN[8:12], DOMAIN[12:16], DOMAIN[16:20], DOMAIN[20:]))
    assert detail(client, dashed.upper())["id"] == DOMAIN


@pytest.mark.parametrize("bad", ["0" * 32, "not-a-uuid", "f" * 32])
def test_an_unknown_domain_is_404_naming_it(client: TestClient, bad: str) -> None:
    post_tray(client, 1)
    r = client.get(f"/api/v1/domains/{bad}")
    assert r.status_code == 404, r.text
    assert r.json()["detail"] == f"NVLink domain {bad!r} not found"


def test_an_overlong_domain_id_is_422(client: TestClient) -> None:
    assert client.get(f"/api/v1/domains/{'a' * 65}").status_code == 422


def test_no_domains_is_an_empty_list(client: TestClient) -> None:
    post(client, build_report(SimulatedFabric("h200x2"), options=CE_ONLY).model_dump_json())
    assert domains(client) == []


# ------------------------------------------------------------------ clique scheduler


def cliques(client: TestClient, k: object) -> Any:
    return client.get("/api/v1/scheduler/cliques", params={"gpus": k})


def test_k_gpus_land_in_one_clique_on_the_fewest_trays(client: TestClient) -> None:
    post_faulty_rack(client)
    body = cliques(client, 6).json()
    assert body["gpus"] == 6
    (fit,) = body["cliques"]
    assert (fit["domain"], fit["clique_id"], fit["healthy_gpus"]) == (DOMAIN, 1, 15)
    assert [h["host"] for h in fit["hosts"]] == [tray_name(1), tray_name(3)]  # full trays
    assert fit["hosts"][0] == {"host": tray_name(1), "gpus": [0, 1, 2, 3],
                               "cuda_visible_devices": "0,1,2,3"}
    assert fit["hosts"][1]["gpus"] == [0, 1]
    assert body["left_out"] == [{"domain": DOMAIN, "clique_id": 2,
                                 "reason": "4 healthy GPUs of 4, 6 asked for"}]


def test_every_healthy_gpu_of_a_clique_and_none_other(client: TestClient) -> None:
    post_faulty_rack(client)
    (fit,) = cliques(client, 15).json()["cliques"]
    picked = {h["host"]: h["gpus"] for h in fit["hosts"]}
    assert list(picked) == [tray_name(n) for n in (1, 3, 5, 2)]
    assert picked[tray_name(2)] == [0, 2, 3]  # GPU1 of tray 2 is short of NVLinks


def test_a_small_job_fits_either_clique_and_one_tray_is_preferred(client: TestClient) -> None:
    post_faulty_rack(client)
    fits = cliques(client, 4).json()["cliques"]
    assert {f["clique_id"] for f in fits} == {1, 2}
    assert all(len(f["hosts"]) == 1 for f in fits)
    assert fits[0]["clique_id"] == 1  # the one with more spare healthy GPUs first


def test_too_many_gpus_fit_nowhere_and_each_clique_says_why(client: TestClient) -> None:
    post_faulty_rack(client)
    body = cliques(client, 16).json()
    assert body["cliques"] == []
    assert {m["clique_id"]: m["reason"] for m in body["left_out"]} == {
        1: "15 healthy GPUs of 20, 16 asked for", 2: "4 healthy GPUs of 4, 16 asked for"}


@pytest.mark.parametrize("bad", [0, -3, "four", 65_537, ""])
def test_bad_k_is_422_naming_gpus(client: TestClient, bad: object) -> None:
    r = cliques(client, bad)
    assert r.status_code == 422, r.text
    assert any(e["loc"][-1] == "gpus" for e in r.json()["detail"])


def test_k_is_required(client: TestClient) -> None:
    r = client.get("/api/v1/scheduler/cliques")
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["query", "gpus"]
