"""Invariants of the real backend that hold on any healthy GPU host with P2P between GPU 0 and 1.

Not speed figures (those are bench/probe_accuracy.py's): only plausibility bounds wide enough
that a healthy host always passes and a broken measurement (wrong units, unverified copies,
counters that do not move) always fails.
"""

from __future__ import annotations

import pytest

from peerwatch.app.analysis.expected import expected
from peerwatch.probes.errors import BadProbeRequest
from peerwatch.probes.fabric import Fabric, TestSpec
from peerwatch.probes.nvidia.real import RealFabric
from peerwatch.probes.report import PAIR_TESTS, LinkState, TestName

MiB = 1 << 20
SMALL = {"bytes_per_copy": 32 * MiB, "copies": 2, "samples": 2, "warmup": 1}
LATENCY = {"bytes_per_copy": 2 * MiB, "copies": 200, "samples": 2, "warmup": 20}


def small(test: TestName, src: int = 0, dst: int = 1) -> TestSpec:
    if test is TestName.ALLREDUCE:
        return TestSpec(test, gpus=(src, dst), **SMALL)
    return TestSpec(test, src=src, dst=dst, **(LATENCY if test is TestName.LATENCY else SMALL))


def tx_bytes(fabric: RealFabric, gpu: int) -> int:
    return sum(c.tx_bytes or 0 for c in fabric.link_counters(gpu))


def test_it_is_a_fabric(fabric: RealFabric) -> None:
    assert isinstance(fabric, Fabric)
    assert fabric.host().driver_version


def test_inventory_names_every_gpu_and_port(fabric: RealFabric) -> None:
    for i in range(fabric.gpu_count()):
        gpu = fabric.gpu(i)
        assert gpu.uuid.startswith("GPU-")
        assert gpu.memory_total_bytes > 1 << 30
        ports = fabric.nvlinks(i)
        assert len(ports) == gpu.nvlink_count
        assert all(p.speed_bps and p.speed_bps > 1e9 for p in ports if p.state is LinkState.UP)


def test_pair_topology_follows_nvlink(fabric: RealFabric) -> None:
    pair = fabric.pair(0, 1)
    assert pair.can_access_peer is not None
    if not pair.nvlink_width:
        assert pair.topology == pair.pcie_path.value
        return
    assert pair.topology == f"NV{pair.nvlink_width}"
    up = [sum(p.state is LinkState.UP for p in fabric.nvlinks(g)) for g in (0, 1)]
    if pair.via_nvswitch:
        assert pair.nvlink_width == min(up)
    if "H200" in fabric.gpu(0).name and pair.via_nvswitch:
        assert pair.topology == "NV18"  # the HGX H200 board: 18 NVLink 4 links per GPU


@pytest.mark.parametrize("test", [*PAIR_TESTS, TestName.ALLREDUCE])
def test_every_test_verifies_and_accounts_its_cost(fabric: RealFabric, test: TestName) -> None:
    spec = small(test)
    m = fabric.measure(spec)
    assert m.verified, f"{test} copied data did not verify"
    assert len(m.samples) == spec.samples and m.value > 0
    assert m.gpu_time_s > 0
    assert m.device_memory_bytes >= (2 * MiB if test is TestName.LATENCY else spec.bytes_per_copy)


def test_ce_write_is_plausible_against_the_topology(fabric: RealFabric) -> None:
    pair = fabric.pair(0, 1)
    want = expected(TestName.CE_WRITE, pair, fabric.gpu(0), fabric.gpu(1),
                    fabric.nvlinks(0)[0].speed_bps if fabric.nvlinks(0) else None)
    assert want is not None
    got = fabric.measure(TestSpec(TestName.CE_WRITE, src=0, dst=1, bytes_per_copy=64 * MiB,
                                  copies=4, samples=3)).value
    assert 0.75 < got / want.value < 1.2, f"ce_write {got / 1e9:.1f} GB/s vs {want.basis}"


def test_latency_is_between_a_fraction_and_a_few_microseconds(fabric: RealFabric) -> None:
    m = fabric.measure(small(TestName.LATENCY))
    assert 0.2e-6 < m.value < 5e-6


def test_staged_is_far_below_p2p(fabric: RealFabric) -> None:
    if not fabric.pair(0, 1).can_access_peer:
        pytest.skip("no P2P on this pair: nothing to compare staging with")
    staged = fabric.measure(small(TestName.STAGED)).value
    ce = fabric.measure(small(TestName.CE_WRITE)).value
    assert staged < 0.5 * ce


@pytest.mark.parametrize("test", [TestName.CE_WRITE, TestName.CE_READ, TestName.SM_WRITE,
                                  TestName.SM_READ])
def test_nvlink_counters_advance_by_the_tests_bytes(fabric: RealFabric, test: TestName) -> None:
    pair = fabric.pair(0, 1)
    if not pair.nvlink_width or not pair.can_access_peer:
        pytest.skip("GPU 0 and 1 are not joined by NVLink")
    before = tx_bytes(fabric, 0)
    m = fabric.measure(small(test))
    sent = tx_bytes(fabric, 0) - before
    # An idle pair: the counters see the test's bytes, give or take protocol overhead.
    assert 0.97 * m.wire_bytes[0] <= sent <= 1.1 * m.wire_bytes[0] + 16 * MiB, (test, sent)


def test_memory_is_given_back(fabric: RealFabric) -> None:
    tr = fabric.transfers()
    fabric.measure(small(TestName.CE_BIDIR))
    free_before = tr._free_memory(0)
    fabric.measure(small(TestName.CE_BIDIR))
    assert abs(tr._free_memory(0) - free_before) < 4 * MiB


def test_unknown_gpu_is_a_bad_request(fabric: RealFabric) -> None:
    with pytest.raises(BadProbeRequest):
        fabric.measure(TestSpec(TestName.CE_WRITE, src=0, dst=99))


def test_the_sweep_runs_every_test_on_the_real_fabric(fabric: RealFabric) -> None:
    from peerwatch.probes.sweep import SweepOptions, run_sweep

    outcome = run_sweep(fabric, SweepOptions(gpus=(0, 1), force=True))
    assert len(outcome.results) == 2 * len(PAIR_TESTS) + 1
    for r in outcome.results:
        assert r.error is None, (r.test, r.error)
        assert r.verified, r.test
    assert outcome.cost.gpu_time_s > 0
