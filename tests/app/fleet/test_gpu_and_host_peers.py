"""A GPU's own copies (h2d, d2h, local) against the same GPU on its fleet peers, and one alert
for a whole host below its peers instead of one per pair — end to end on SQLite and
PostgreSQL: real ingest of simulated hosts, the stats recomputed, the verdicts, the alerts,
the API and /metrics (docs/fleet-peers.md)."""

from __future__ import annotations

from fastapi.testclient import TestClient

from peerwatch.app.analysis.verdict import Verdict
from peerwatch.app.main import create_app
from peerwatch.app.records.health import HostHealth
from peerwatch.probes.sim.faults import BandwidthFactor, HostCopySlow, PcieDowntrained
from tests.app.fleet.peerfleet import PeerFleet

GPU_GROUP = "of the fleet median for NVIDIA H200 PCIe gen5 x16 "


def _among_peers(fleet: PeerFleet, *faults: object, preset: str = "h200x2") -> HostHealth:
    for i in range(5):
        fleet.add(f"ok-{i}", preset=preset)
    fleet.add("odd", *faults, preset=preset)  # type: ignore[arg-type]
    fleet.sweeps(7)
    fleet.round()
    return fleet.health("odd")


def test_a_gpu_slow_to_its_host_from_the_start_is_flagged_against_its_peers(
        fleet: PeerFleet) -> None:
    odd = _among_peers(fleet, HostCopySlow(gpu=1, factor=0.9))
    # its own history absorbed it: every test healthy by its expectation and baseline ...
    assert all(t.verdict is Verdict.HEALTHY for t in odd.tests.values())
    gpus = {g.gpu: g for g in odd.judgement.gpus}
    # ... but GPU1's host copies are far below the same GPU on its five peers
    reason = gpus[1].reason
    assert gpus[1].verdict is Verdict.DEGRADED and reason.startswith("GPU1 is 0.9"), reason
    assert GPU_GROUP in reason and "over 6 hosts on driver" in reason and "GB/s vs" in reason
    assert odd.gpu_facts[1]["peer"]["test"] in ("h2d", "d2h")
    assert gpus[0].verdict is Verdict.HEALTHY and 0 not in odd.gpu_facts
    assert all(p.verdict is Verdict.HEALTHY for p in odd.judgement.pairs)
    assert odd.judgement.verdict is Verdict.DEGRADED and not odd.peers["below"]
    alerts = fleet.host("odd").alerts("firing")
    assert [(a.rule, a.labels["gpu"]) for a in alerts] == [("GPUBelowFleetPeers", "1")]
    assert "PCIe gen5 x16" in alerts[0].annotations["description"]
    assert not fleet.host("ok-0").alerts("firing")
    with TestClient(create_app(fleet.settings)) as client:
        body = client.get("/api/v1/fleet/peers", params={"test": odd.gpu_facts[1]["peer"]
                                                         ["test"]}).json()
        metrics = client.get("/metrics").text
    (group,) = body["groups"]
    assert (group["topology"], group["hosts"], group["pairs"]) == ("PCIe gen5 x16", 6, 12)
    assert [(b["host"], b["src"], b["dst"]) for b in group["below"]] == [("odd", 1, 1)]
    series = [line for line in metrics.splitlines()
              if line.startswith("peerwatch_gpu_fleet_peer_ratio{")]
    assert len(series) == 1 and 'host="odd"' in series[0] and 'gpu="1"' in series[0]


def test_a_downtrained_gpu_is_left_to_the_pcie_rules(fleet: PeerFleet) -> None:
    odd = _among_peers(fleet, PcieDowntrained(gpu=1, gen=4, width=16))
    gpus = {g.gpu: g for g in odd.judgement.gpus}
    assert "fleet median" not in gpus[1].reason and 1 not in odd.gpu_facts
    rules = {a.rule for a in fleet.host("odd").alerts()}
    assert "GPUBelowFleetPeers" not in rules and "HostBelowFleetPeers" not in rules
    with TestClient(create_app(fleet.settings)) as client:
        body = client.get("/api/v1/fleet/peers", params={"test": "h2d"}).json()
    (group,) = body["groups"]
    assert (group["hosts"], group["pairs"]) == (6, 11)  # GPU1 of "odd" is in no group


def test_a_pair_slow_alone_pages_per_pair_and_a_whole_host_once(fleet: PeerFleet) -> None:
    odd = _among_peers(fleet, BandwidthFactor(src=0, dst=1, factor=0.9), preset="mesh4")
    assert not odd.peers["below"] and odd.peers["pairs_below"] == 2
    assert {(a.rule, a.labels.get("gpu"), a.labels.get("peer_gpu"))
            for a in fleet.host("odd").alerts("firing")} == {
        ("P2PBelowFleetPeers", "0", "1")}  # both directions below: one page for the pair
    [pair] = fleet.host("odd").alerts("firing")
    summary = pair.annotations["summary"]
    assert summary.startswith("GPU0<->GPU1 on odd is 0.9") and " of its fleet peers: GPU0->GPU1 " \
        in summary and "; GPU1->GPU0 " in summary, summary
    slow = fleet.add("slow", *(BandwidthFactor(src=s, dst=d, factor=0.9)
                               for s in range(4) for d in range(s + 1, 4)),
                     preset="mesh4", behind_s=7 * 300.0)
    fleet.sweeps(7, only=[slow])
    fleet.round()
    whole = fleet.health("slow")
    assert whole.peers["below"] and whole.peers["pairs_below"] == 12
    assert sum(p.verdict is Verdict.DEGRADED for p in whole.judgement.pairs) == 12
    alerts = slow.alerts("firing")
    assert [a.rule for a in alerts] == ["HostBelowFleetPeers"]
    summary = alerts[0].annotations["summary"]
    assert summary.startswith("slow is 0.9") and summary.endswith(": 12 pairs below")
    assert "GPU0, GPU1, GPU2, GPU3" in alerts[0].annotations["description"]


def test_the_pcie_pairs_of_a_downtrained_gpu_are_left_to_the_pcie_rules(
        fleet: PeerFleet) -> None:
    """On a PCIe-only board a GPU trained at x4 slows its pairs to a quarter: that is
    PCIeLinkDowntrained's page, not one peer alert per pair (the demo's pcie4-02)."""
    odd = _among_peers(fleet, PcieDowntrained(gpu=2, width=4), preset="pcie4")
    assert all("fleet median" not in p.reason for p in odd.judgement.pairs)
    assert all(2 not in key or "peer" not in f for key, f in odd.pair_facts.items())
    # GPU2 slow with every peer is the fault; its pairs say so and blame only it
    assert {key for key, f in odd.pair_facts.items() if f.get("explained_by") == 2} == {
        (s, d) for s in range(4) for d in range(4) if s != d and 2 in (s, d)}
    rules = {a.rule for a in fleet.host("odd").alerts("firing")}
    assert "PCIeLinkDowntrained" in rules and not {r for r in rules if "FleetPeers" in r}
    with TestClient(create_app(fleet.settings)) as client:
        body = client.get("/api/v1/fleet/peers", params={"test": "ce_write"}).json()
    # six hosts of 12 ordered pairs, less the six of GPU2 on "odd"
    assert sum(g["pairs"] for g in body["groups"]) == 6 * 12 - 6
