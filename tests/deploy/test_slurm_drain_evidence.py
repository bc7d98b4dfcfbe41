"""`peerwatch drain` against a real Slurm (tests/deploy/slurm_cluster.py: the real node has
8 GPUs as a GRES, four more GPU nodes and eight CPU-only nodes) and real `peerwatch serve`s
fed simulated probe reports: what peerwatch takes out comes back only on proof, and its
breaker counts the GPU nodes it watches.

- A server whose database was wiped, while Slurm still shows nodes peerwatch drained, trips
  its breaker closed (`state_lost`) and adopts them; nothing returns until a person resets
  it, and after the reset a node whose GPU is still missing stays out, proven by the PCI bus
  (gpu-b) or by Slurm's own GRES count (the real node: its lost GPU left the bus too), while
  the node that healed returns after a full sweep.
- The breaker's share counts the GPU nodes the server hears from, not the CPU nodes Slurm
  lists, and a person's maintenance drain uses none of its slots.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from peerwatch.probes.sim.faults import GpuLost, LinksDown
from tests.deploy.slurm_cluster import ONE_CLUSTER_AT_A_TIME, Cluster, slurm_cluster
from tests.deploy.test_slurm_drain import ACT, ADMIN, drain, drain_server, report

pytestmark = ONE_CLUSTER_AT_A_TIME

GPU_NODES = ("gpu-b", "gpu-c", "gpu-d", "gpu-e")
CPU_NODES = tuple(f"cpu-{i:02d}" for i in range(1, 9))
# lost_grace 0: the database is wiped seconds after the drains here, not minutes as for real
ROOMY = ACT + "breaker: {max_per_window: 100, max_share_out: 1.0, lost_grace: 0}\n"
OFF_BUS = (GpuLost(gpu=4),)  # NVML lost it; the PCI bus still lists it
GONE = (GpuLost(gpu=4, on_pci=False),)  # gone from the bus too: only Slurm's GRES knows
CUT = (LinksDown(gpu=5, count=18),)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with slurm_cluster(tmp_path_factory.mktemp("slurm"), extra=(*GPU_NODES, *CPU_NODES),
                       gpus=8) as c:
        yield c


@pytest.fixture
def clean(cluster: Cluster) -> Cluster:
    cluster.undrain_all()
    return cluster


def drained(cluster: Cluster, node: str) -> bool:
    return "DRAIN" in cluster.state(node)


def reset(url: str) -> None:
    done = subprocess.run([sys.executable, "-m", "peerwatch.app.cli", "drain", "--reset-breaker",
                           "--server", url, "--by", "alice",
                           "--comment", "database wiped; drained nodes checked"],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PEERWATCH_ADMIN_TOKEN": ADMIN})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "reset by admin:admin-token (says alice)" in done.stdout, done.stdout


def test_a_wiped_server_keeps_peerwatchs_nodes_out_until_proven(
        clean: Cluster, tmp_path: Path) -> None:
    node, (bus, healed, fine) = clean.node, clean.extra[:3]
    with drain_server(tmp_path / "before") as before:
        report(before, node, GONE)
        report(before, bus, OFF_BUS)
        report(before, healed, CUT)
        report(before, fine)
        out = drain(clean, before, tmp_path, ROOMY).stdout
    assert all(drained(clean, n) for n in (node, bus, healed)), out
    assert not drained(clean, fine)
    assert clean.reason(node).startswith("peerwatch: GPU count: the scheduler gives 8, NVML "
                                         "lists 7"), clean.reason(node)

    with drain_server(tmp_path / "wiped") as wiped:  # a fresh database, Slurm unchanged
        report(wiped, node, GONE)  # the first report this server sees: 7 GPUs
        report(wiped, bus, OFF_BUS)
        report(wiped, healed)
        report(wiped, fine)
        out = drain(clean, wiped, tmp_path, ROOMY).stdout
        assert "(breaker): breaker_trip: the server has no record of peerwatch's drains" in out
        breaker = httpx.get(f"{wiped}/api/v1/drain/breaker").json()
        assert breaker["open"] and breaker["cause"] == "state_lost", breaker
        alerts = httpx.get(f"{wiped}/api/v1/alerts").json()["alerts"]
        assert any(a["labels"]["alertname"] == "DrainBreakerOpen" for a in alerts)
        marks = httpx.get(f"{wiped}/api/v1/drain/marks").json()["marks"]
        assert sorted(m["host"] for m in marks if m["adopted"]) == sorted([node, bus, healed])
        report(wiped, healed)  # healthy, a full sweep after its adoption: proven whole,
        for _ in range(2):  # but nothing returns while the state is lost
            out = drain(clean, wiped, tmp_path, ROOMY).stdout
        assert "not returned: breaker open since the state was lost" in out, out
        assert all(drained(clean, n) for n in (node, bus, healed))

        reset(wiped)
        for host, faults in ((node, GONE), (bus, OFF_BUS), (healed, ()), (fine, ())):
            report(wiped, host, faults)  # a full sweep after the adoption
        out = drain(clean, wiped, tmp_path, ROOMY).stdout
        assert f"{node}: keep: still out: GPU count: the scheduler gives 8, NVML lists 7" in out
        assert f"{bus}: keep: still out: GPUMissing: GPU4 is missing from {bus}" in out, out
        clean.wait_for(f"{healed} resumed", lambda: not drained(clean, healed), 180)
        assert drained(clean, node) and drained(clean, bus)
        assert clean.reason(bus).startswith("peerwatch: ")


def test_the_breaker_counts_gpu_nodes_and_not_a_persons_drain(
        clean: Cluster, tmp_path: Path) -> None:
    node, gpus = clean.node, clean.extra[:4]
    maint = gpus[3]
    clean.scontrol("update", f"nodename={maint}", "state=drain", "reason=maint by bob: PSU swap")
    policy = ACT + "breaker: {max_per_window: 100, max_share_out: 0.4}\n"
    with drain_server(tmp_path) as url:
        for host in (node, *gpus[:3]):
            report(url, host, CUT)
        report(url, maint)
        out = drain(clean, url, tmp_path, policy).stdout
        took = [n for n in (node, *gpus[:3]) if drained(clean, n)]
        assert len(took) == 2, out  # 40 % of 5 GPU nodes, not of the 13 Slurm nodes
        assert "40% of 5 GPU nodes out at once (0 out by peerwatch already)" in out, out
        assert clean.reason(maint) == "maint by bob: PSU swap"
        assert not any(drained(clean, c) for c in CPU_NODES)
        breaker = httpx.get(f"{url}/api/v1/drain/breaker").json()
        assert breaker["open"] and breaker["cause"] == "limit"
