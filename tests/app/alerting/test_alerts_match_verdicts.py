"""One judgement, read by all: for every simulated fault type, the firing alerts and the
stored non-healthy objects name the same GPUs, both ways — no alert about a GPU the verdicts
call healthy, no non-healthy GPU, link or pair that no alert names. Host-level alerts that
describe pairs (ProbeFailing) name their GPUs in the description. A pair explained by a GPU
(`analysis/attribution.py`: its fabric not ready, its links short, bad with every peer) is
non-healthy but names only that GPU."""

from __future__ import annotations

import re

import pytest
from sqlalchemy.orm import Session, sessionmaker

from peerwatch.app.analysis.verdict import Verdict
from peerwatch.app.queries.health import host_health
from peerwatch.app.runtime.config import Settings
from peerwatch.probes.sim.faults import (
    BandwidthFactor,
    BusyGpu,
    Contention,
    ErrorGrowth,
    FabricManagerDown,
    FabricNotCompleted,
    FabricStatusError,
    FabricUnhealthy,
    Fault,
    GpuLost,
    HostCopySlow,
    LinksDown,
    P2PDisabled,
    PcieDowntrained,
    PeerCopiesFail,
    TransferFails,
)
from tests.app.alerting.simhost import SimHost

BAD = (Verdict.DEGRADED, Verdict.DOWN)
FAULTS: list[Fault] = [
    LinksDown(gpu=1, count=2), BandwidthFactor(src=0, dst=1, factor=0.5),
    ErrorGrowth(gpu=0, link=3, counter="replay", per_second=0.5), P2PDisabled(a=0, b=1),
    PcieDowntrained(gpu=1, gen=4, width=8), PcieDowntrained(gpu=1, gen=4, width=16),
    TransferFails(gpu=1), GpuLost(gpu=1), FabricNotCompleted(gpu=1),
    FabricStatusError(gpu=1), FabricUnhealthy(gpu=1), PeerCopiesFail(a=0, b=1),
    FabricManagerDown(), Contention(gpu=0, peer=1), BusyGpu(gpu=1),
    HostCopySlow(gpu=1, factor=0.4),
]


def _alerted(host: SimHost) -> set[int]:
    gpus: set[int] = set()
    for a in host.alerts("firing"):
        named = {a.labels.get("gpu"), a.labels.get("peer_gpu")} - {None}
        if not named:  # a host-level alert: the GPUs its description names
            named = set(re.findall(r"GPU(\d+)", a.annotations.get("description", "")))
        gpus |= {int(g) for g in named}
    return gpus


def _not_healthy(host: SimHost) -> set[int]:
    with host.sessions() as s:
        j = host_health(s, host.settings, host.hostname).judgement
    gpus = {g.gpu for g in j.gpus if g.verdict in BAD}
    gpus |= {x.gpu for x in j.links if x.verdict in BAD}
    for p in j.pairs:  # a pair explained by a GPU blames only it, in words
        if p.verdict in BAD:
            gpus |= {p.explained_by} if p.explained_by is not None else {p.src, p.dst}
            assert p.explained_by is None or f"GPU{p.explained_by}" in p.reason, p.reason
    return gpus


@pytest.mark.parametrize("fault", FAULTS, ids=lambda f: repr(f))
def test_firing_alerts_and_stored_verdicts_name_the_same_gpus(
        sessions: sessionmaker[Session], sqlite_settings: Settings, fault: Fault) -> None:
    host = SimHost(sessions, sqlite_settings)
    for _ in range(3):
        host.step(300, "sweep")
    host.inject(fault)
    for i in range(36):  # 18 min: past every rule's `for` (PCIe: 15 min)
        host.step(30, "sweep" if i % 10 == 9 else "inventory")
    alerted, bad = _alerted(host), _not_healthy(host)
    assert alerted == bad, (fault, {a.rule for a in host.alerts("firing")})


def test_a_host_below_its_fleet_peers_alerts_the_gpus_its_verdicts_name(
        sessions: sessionmaker[Session], sqlite_settings: Settings) -> None:
    """The fleet-peer finding (docs/fleet-peers.md): a whole host 9 % slow from the start,
    among five healthy peers; its own tests stay healthy, its pairs do not."""
    from tests.app.fleet.peerfleet import PeerFleet, host_slow

    fleet = PeerFleet(sessions, sqlite_settings)
    for i in range(5):
        fleet.add(f"peer-{i}")
    slow = fleet.add("slow", *host_slow(2, 0.91))
    fleet.sweeps(7)
    fleet.round()
    assert _alerted(slow) == _not_healthy(slow) == {0, 1}
    assert {a.rule for a in slow.alerts("firing")} == {"HostBelowFleetPeers"}
    assert _alerted(fleet.host("peer-0")) == _not_healthy(fleet.host("peer-0")) == set()


def test_a_gpu_below_its_fleet_peers_alerts_the_gpu_its_verdicts_name(
        sessions: sessionmaker[Session], sqlite_settings: Settings) -> None:
    """A GPU's own copies 10 % slow from the start among five healthy peers: its own tests
    stay healthy, the GPU does not, and one GPU alert names it (not its pairs, not the host)."""
    from tests.app.fleet.peerfleet import PeerFleet

    fleet = PeerFleet(sessions, sqlite_settings)
    for i in range(5):
        fleet.add(f"peer-{i}")
    slow = fleet.add("slow", HostCopySlow(gpu=1, factor=0.9))
    fleet.sweeps(7)
    fleet.round()
    assert _alerted(slow) == _not_healthy(slow) == {1}
    assert {a.rule for a in slow.alerts("firing")} == {"GPUBelowFleetPeers"}
