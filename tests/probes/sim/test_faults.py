"""Each fault changes what NVML would report and what the tests measure, consistently."""

from __future__ import annotations

import pytest

from peerwatch.probes.budgets import DEFAULT_BUDGETS
from peerwatch.probes.errors import BadProbeRequest, TransferError
from peerwatch.probes.fabric import TestSpec
from peerwatch.probes.report import LinkState, P2PCap, P2PStatus, TestName
from peerwatch.probes.sim.faults import (
    BandwidthFactor,
    BusyGpu,
    ErrorGrowth,
    LinksDown,
    P2PDisabled,
    PcieDowntrained,
    TransferHangs,
)
from peerwatch.probes.sim.simulated import SimulatedFabric
from peerwatch.probes.sweep import SweepOptions, run_sweep


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _ce(fab: SimulatedFabric, src: int, dst: int, test: TestName = TestName.CE_WRITE) -> float:
    return fab.measure(DEFAULT_BUDGETS[test].spec(test, src, dst)).value


def test_links_down_on_nvswitch_narrow_every_pair_of_that_gpu() -> None:
    fab = SimulatedFabric("hgx8", seed=1)
    healthy = _ce(fab, 3, 4)
    fab.inject(LinksDown(gpu=3, count=6))
    ports = fab.nvlinks(3)
    assert [p.state for p in ports].count(LinkState.DOWN) == 6
    assert all(p.speed_bps is None for p in ports if p.state is LinkState.DOWN)
    assert fab.pair(3, 4).topology == "NV12" and fab.pair(5, 3).nvlink_width == 12
    assert fab.pair(4, 5).topology == "NV18"
    assert _ce(fab, 3, 4) == pytest.approx(healthy * 12 / 18, rel=0.03)


def test_a_link_down_on_a_mesh_downs_both_ends_of_that_cable() -> None:
    fab = SimulatedFabric("mesh4", faults=[LinksDown(gpu=0, links=(0,))])  # link 0: GPU0 -> GPU1
    assert fab.pair(0, 1).topology == "NV3" and fab.pair(0, 2).topology == "NV4"
    assert [p.state for p in fab.nvlinks(1)][0] is LinkState.DOWN
    fab.inject(LinksDown(gpu=0, links=(1, 2, 3)))
    assert fab.pair(0, 1).topology == "NODE" and fab.pair(0, 1).nvlink_width == 0
    assert _ce(fab, 0, 1) < 30e9  # now over PCIe gen4


def test_mesh_ports_name_their_peer_and_switch_ports_do_not() -> None:
    mesh = SimulatedFabric("mesh4")
    peers = {(p.remote_gpu, p.remote_pci_bus_id) for p in mesh.nvlinks(0)}
    assert peers == {(1, mesh.gpu(1).pci_bus_id), (2, mesh.gpu(2).pci_bus_id)}
    assert mesh.pair(0, 3).topology == "SYS" and mesh.pair(1, 2).topology == "SYS"
    hgx = SimulatedFabric("hgx8")
    assert {p.remote_gpu for p in hgx.nvlinks(0)} == {None}
    assert hgx.pair(0, 3).pcie_path.value == "NODE" and hgx.pair(0, 4).pcie_path.value == "SYS"
    assert hgx.gpu(0).numa_node == 0 and hgx.gpu(5).numa_node == 1


def test_bandwidth_factor_slows_that_pair_only() -> None:
    fab = SimulatedFabric("hgx8", seed=4)
    before = _ce(fab, 2, 5), _ce(fab, 5, 2), _ce(fab, 2, 6)
    fab.inject(BandwidthFactor(src=2, dst=5, factor=0.5, both_directions=False))
    assert _ce(fab, 2, 5) == pytest.approx(before[0] * 0.5, rel=0.03)
    assert _ce(fab, 5, 2) == pytest.approx(before[1], rel=0.03)
    assert _ce(fab, 2, 6) == pytest.approx(before[2], rel=0.03)


def test_error_counters_grow_only_under_a_fault_and_on_the_clock() -> None:
    clock = FakeClock()
    fab = SimulatedFabric("hgx8", clock=clock)
    lifetime = fab.link_counters(2)
    assert all(5 <= c.crc_data <= 20 for c in lifetime)  # type: ignore[operator]
    clock.now += 3600
    assert fab.link_counters(2) == lifetime
    growth = ErrorGrowth(gpu=2, link=5, counter="replay", per_second=0.5)
    fab.inject(growth)
    clock.now += 10
    assert fab.link_counters(2)[5].replay == 5 and fab.link_counters(2)[4].replay == 0
    fab.clear(growth)
    clock.now += 100
    assert fab.link_counters(2)[5].replay == 5  # lifetime counters never go down


def test_measure_books_exactly_its_own_bytes_on_the_tx_counters() -> None:
    fab = SimulatedFabric("h200x2")
    tx = lambda g: sum(c.tx_bytes for c in fab.link_counters(g))  # noqa: E731
    rx = lambda g: sum(c.rx_bytes for c in fab.link_counters(g))  # noqa: E731
    b = DEFAULT_BUDGETS[TestName.CE_WRITE]
    m = fab.measure(b.spec(TestName.CE_WRITE, 0, 1))
    assert m.wire_bytes == {0: (b.warmup + b.copies * b.samples) * b.bytes_per_copy}
    assert abs(tx(0) - m.wire_bytes[0]) <= 18 * 1024 and tx(1) == 0  # KiB-granular per link
    assert abs(rx(1) - m.wire_bytes[0]) <= 18 * 1024
    assert len({c.tx_bytes for c in fab.link_counters(0)}) == 1  # spread evenly


def test_p2p_disabled_pair_reports_regkey_and_runs_at_staged_speed() -> None:
    fab = SimulatedFabric("h200x2", faults=[P2PDisabled(a=0, b=1)])
    pair = fab.pair(1, 0)
    assert set(pair.p2p.values()) == {P2PStatus.DISABLED_BY_REGKEY} and not pair.can_access_peer
    staged = _ce(fab, 0, 1, TestName.STAGED)
    for test in (TestName.CE_WRITE, TestName.SM_READ):
        assert _ce(fab, 0, 1, test) == pytest.approx(staged, rel=0.05)
    assert staged < 40e9
    assert fab.measure(DEFAULT_BUDGETS[TestName.CE_WRITE].spec(
        TestName.CE_WRITE, 0, 1)).wire_bytes == {}  # nothing over NVLink


def test_pcie_only_host_stages_across_sockets() -> None:
    fab = SimulatedFabric("pcie4")
    assert fab.pair(0, 1).can_access_peer and fab.pair(0, 1).p2p[P2PCap.NVLINK] is (
        P2PStatus.NOT_SUPPORTED)
    assert fab.pair(1, 2).p2p[P2PCap.READ] is P2PStatus.CHIPSET_NOT_SUPPORTED
    assert _ce(fab, 1, 2) == pytest.approx(_ce(fab, 1, 2, TestName.STAGED), rel=0.05)
    assert _ce(fab, 0, 1) > _ce(fab, 1, 2) * 1.2
    assert fab.nvlinks(0) == [] and fab.link_counters(0) == []


def test_pcie_downtrained_shows_and_slows_pcie_paths() -> None:
    fab = SimulatedFabric("pcie4", seed=2)
    before = _ce(fab, 0, 1)
    fab.inject(PcieDowntrained(gpu=1))
    pcie = fab.gpu(1).pcie
    assert (pcie.gen_current, pcie.width_current, pcie.width_max) == (4, 8, 16)
    assert _ce(fab, 0, 1) == pytest.approx(before / 2, rel=0.03)


def test_busy_gpu_reports_processes_and_utilisation() -> None:
    fab = SimulatedFabric("hgx8", faults=[BusyGpu(gpu=6, processes=3)])
    act = fab.activity(6)
    assert act.compute_processes == 3 and act.utilization_pct == 97.0
    assert act.memory_used_bytes > fab.activity(5).memory_used_bytes  # type: ignore[operator]
    assert fab.activity(5).compute_processes == 0


def test_hang_blocks_until_released_then_fails() -> None:
    fab = SimulatedFabric("h200x2", faults=[TransferHangs(seconds=0.05)])
    with pytest.raises(TransferError, match="hung for"):
        fab.measure(TestSpec(TestName.CE_WRITE, src=0, dst=1))


def test_faults_naming_missing_gpus_or_not_active_are_refused() -> None:
    fab = SimulatedFabric("h200x2")
    with pytest.raises(BadProbeRequest, match="no GPU 2 on simulated:h200x2"):
        fab.inject(LinksDown(gpu=2))
    with pytest.raises(BadProbeRequest, match="not active"):
        fab.clear(LinksDown(gpu=0))
    with pytest.raises(ValueError, match="factor"):
        BandwidthFactor(src=0, dst=1, factor=1.5)
    with pytest.raises(BadProbeRequest):
        fab.measure(TestSpec(TestName.CE_WRITE, src=1, dst=1))


def test_clear_restores_a_healthy_fabric() -> None:
    fab = SimulatedFabric("hgx8", faults=[LinksDown(gpu=0, count=18), P2PDisabled(a=1, b=2)])
    assert fab.pair(0, 1).topology == "NODE"
    fab.clear()
    assert fab.faults == () and fab.pair(0, 1).topology == "NV18" and fab.pair(1, 2).can_access_peer
    assert all(r.error is None for r in run_sweep(fab, SweepOptions(
        tests=(TestName.CE_WRITE,))).results)


def test_hostnames_give_distinct_uuids_in_a_fleet() -> None:
    a, b = SimulatedFabric("hgx8", hostname="node-a"), SimulatedFabric("hgx8", hostname="node-b")
    assert a.gpu(0).uuid != b.gpu(0).uuid and a.gpu(0).uuid == SimulatedFabric(
        "hgx8", hostname="node-a").gpu(0).uuid
    assert a.host().hostname == "node-a" and a.host().fabric == "simulated:hgx8"


def test_a_gpu_lost_leaves_the_inventory_and_the_sweep() -> None:
    """Xid 79: NVML answers "GPU is lost" for it; the probe records that once and measures
    the others; clearing the fault (the reset) brings it back."""
    from peerwatch.probes.report import ReportKind, TestName
    from peerwatch.probes.sim.faults import GpuLost
    from peerwatch.probes.sweep import SweepOptions, build_report
    fabric = SimulatedFabric("hgx8", seed=1, hostname="lost", faults=[GpuLost(gpu=4)])
    report = build_report(fabric, ReportKind.SWEEP, SweepOptions(tests=(TestName.CE_WRITE,)))
    assert [g.index for g in report.inventory.gpus] == [0, 1, 2, 3, 5, 6, 7]
    assert all(4 not in (r.src, r.dst) for r in report.results) and len(report.results) == 42
    assert any("GPU is lost" in e.message for e in report.errors)
    fabric.clear()
    back = build_report(fabric, ReportKind.INVENTORY)
    assert len(back.inventory.gpus) == 8
