"""Healthy simulated hosts measure what peerwatch.app.analysis.expected promises for their topology,
and a fault that degrades a pair without changing its topology shows as a low ratio."""

from __future__ import annotations

import pytest

from peerwatch.app.cli.bench_expect import Expectations
from peerwatch.probes.report import PCIE_TESTS, TestName
from peerwatch.probes.sim.faults import BandwidthFactor, LinksDown, P2PDisabled, PcieDowntrained
from peerwatch.probes.sim.presets import PRESET_NAMES
from peerwatch.probes.sim.simulated import SimulatedFabric
from peerwatch.probes.sweep import SweepOptions, build_report


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_healthy_pairs_are_within_ten_percent_of_expected(preset: str) -> None:
    report = build_report(SimulatedFabric(preset, seed=9))
    judge = Expectations(report.inventory)
    for r in report.results:
        if r.test in (TestName.ALLREDUCE, TestName.LOCAL):  # local: against its baseline only
            continue
        j = judge.judge(r)
        assert j.ratio is not None and 0.9 < j.ratio < 1.1, (r.test, r.src, r.dst, j)


def test_topology_faults_move_the_expectation_with_them() -> None:
    fab = SimulatedFabric("hgx8", seed=9, faults=[
        LinksDown(gpu=1, count=9), P2PDisabled(a=2, b=3), PcieDowntrained(gpu=2, width=8)])
    report = build_report(fab)
    judge = Expectations(report.inventory)
    for r in report.results:
        if r.test not in (TestName.ALLREDUCE, TestName.LOCAL, *PCIE_TESTS):
            assert 0.9 < judge.judge(r).ratio < 1.1, (r.test, r.src, r.dst)  # type: ignore[operator]


def test_a_downtrained_pcie_link_keeps_the_bar_and_shows_its_cost() -> None:
    """h2d/d2h are expected at what the slot offers (gen x width at maximum): a link trained
    x8 of x16 measures half, and the basis says how it trained."""
    fab = SimulatedFabric("hgx8", seed=9, faults=[PcieDowntrained(gpu=2, width=8)])
    report = build_report(fab, options=SweepOptions(tests=PCIE_TESTS))
    judge = Expectations(report.inventory)
    for r in report.results:
        j = judge.judge(r)
        assert j.expectation is not None and j.ratio is not None
        if r.src == 2:
            assert j.ratio == pytest.approx(0.5, abs=0.04), r.test
            assert j.expectation.basis == "PCIe gen5 x16 (63.0 GB/s) x 0.88; trained gen5 x8 now"
        else:
            assert j.ratio == pytest.approx(1.0, abs=0.04), (r.test, r.src)


def test_a_slow_pair_shows_a_low_ratio() -> None:
    fab = SimulatedFabric("mesh4", seed=9, faults=[BandwidthFactor(src=0, dst=2, factor=0.6)])
    report = build_report(fab)
    judge = Expectations(report.inventory)
    ratios = {(r.test, r.src, r.dst): judge.judge(r).ratio for r in report.results}
    assert ratios[(TestName.CE_WRITE, 0, 2)] == pytest.approx(0.6, abs=0.04)
    assert ratios[(TestName.CE_WRITE, 2, 0)] == pytest.approx(0.6, abs=0.04)
    assert ratios[(TestName.CE_WRITE, 0, 1)] == pytest.approx(1.0, abs=0.05)
    assert ratios[(TestName.LATENCY, 0, 2)] == pytest.approx(1.0, abs=0.1)
