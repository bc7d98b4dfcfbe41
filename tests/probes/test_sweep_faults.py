"""Whole reports from faulty simulated hosts: every fault on every preset it applies to
yields a valid report whose inventory, counters and results all show it."""

from __future__ import annotations

import itertools

import pytest

from peerwatch.probes.report import (
    LinkCounters,
    LinkState,
    P2PStatus,
    Report,
    TestName,
    TransferResult,
)
from peerwatch.probes.sim.faults import (
    BandwidthFactor,
    BusyGpu,
    Contention,
    ErrorGrowth,
    Fault,
    LinksDown,
    P2PDisabled,
    PcieDowntrained,
    TransferFails,
)
from peerwatch.probes.sim.presets import PRESET_NAMES
from peerwatch.probes.sim.simulated import SimulatedFabric
from peerwatch.probes.sweep import SweepOptions, build_report

TESTS = (TestName.CE_WRITE, TestName.LATENCY, TestName.STAGED, TestName.ALLREDUCE)
NVLINK_PRESETS = ("h200x2", "hgx8", "mesh4")


class TickingClock:
    """Advances one second every time it is read: a sweep spans many seconds."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


def _report(preset: str, *faults: Fault) -> tuple[Report, Report]:
    """(healthy, faulty) reports of the same host and seed."""
    opts = SweepOptions(tests=TESTS)
    healthy = build_report(SimulatedFabric(preset, seed=3, clock=TickingClock()), options=opts)
    faulty = build_report(SimulatedFabric(preset, seed=3, clock=TickingClock(), faults=faults),
                          options=opts)
    assert Report.model_validate_json(faulty.model_dump_json()) == faulty
    return healthy, faulty


def _value(report: Report, test: TestName, src: int, dst: int) -> float:
    [r] = [r for r in report.results if (r.test, r.src, r.dst) == (test, src, dst)]
    assert r.value is not None
    return r.value


@pytest.mark.parametrize("preset", NVLINK_PRESETS)
def test_links_down(preset: str) -> None:
    healthy, faulty = _report(preset, LinksDown(gpu=0, links=(0, 1)))  # on mesh4: to GPU 1
    down = [p for p in faulty.inventory.nvlinks if p.state is LinkState.DOWN]
    assert {p.gpu for p in down} >= {0} and len([p for p in down if p.gpu == 0]) == 2
    pair = next(p for p in faulty.inventory.pairs if (p.src, p.dst) == (0, 1))
    before = next(p for p in healthy.inventory.pairs if (p.src, p.dst) == (0, 1))
    assert pair.nvlink_width == before.nvlink_width - 2 and pair.topology != before.topology
    assert _value(faulty, TestName.CE_WRITE, 0, 1) < 0.9 * _value(healthy, TestName.CE_WRITE,
                                                                     0, 1)


@pytest.mark.parametrize("preset", NVLINK_PRESETS)
def test_error_growth_shows_between_the_counter_samples(preset: str) -> None:
    _, faulty = _report(preset, ErrorGrowth(gpu=1, link=2, counter="recovery", per_second=2))
    first, last = faulty.counters

    def recovery(sample: list[LinkCounters]) -> dict[tuple[int, int], int | None]:
        return {(c.gpu, c.link): c.recovery for c in sample}

    grew = {k for k, v in recovery(last.links).items() if v != recovery(first.links)[k]}
    assert grew == {(1, 2)}


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_p2p_disabled(preset: str) -> None:
    healthy, faulty = _report(preset, P2PDisabled(a=0, b=1))
    pair = next(p for p in faulty.inventory.pairs if (p.src, p.dst) == (1, 0))
    assert set(pair.p2p.values()) == {P2PStatus.DISABLED_BY_REGKEY} and not pair.can_access_peer
    assert _value(faulty, TestName.CE_WRITE, 1, 0) == pytest.approx(
        _value(faulty, TestName.STAGED, 1, 0), rel=0.05)
    assert _value(faulty, TestName.LATENCY, 1, 0) > 10e-6


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_pcie_downtrained(preset: str) -> None:
    healthy, faulty = _report(preset, PcieDowntrained(gpu=1, gen=3))
    gpu = faulty.inventory.gpus[1]
    assert gpu.pcie.gen_current == 3 < gpu.pcie.gen_max  # type: ignore[operator]
    assert _value(faulty, TestName.STAGED, 0, 1) < 0.8 * _value(healthy, TestName.STAGED, 0, 1)


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_bandwidth_factor_and_failing_gpu_together(preset: str) -> None:
    n = len(SimulatedFabric(preset).preset.gpus)
    healthy, faulty = _report(preset, BandwidthFactor(src=0, dst=1, factor=0.5),
                              TransferFails(gpu=n - 1, test=TestName.LATENCY))
    assert _value(faulty, TestName.CE_WRITE, 0, 1) == pytest.approx(
        0.5 * _value(healthy, TestName.CE_WRITE, 0, 1), rel=0.05)
    failed = {(r.src, r.dst) for r in faulty.results if r.error}
    assert failed == {p for p in itertools.permutations(range(n), 2) if n - 1 in p}


@pytest.mark.parametrize("preset", NVLINK_PRESETS)
def test_contention_is_seen_in_counters_and_results(preset: str) -> None:
    _, faulty = _report(preset, Contention(gpu=0, peer=1, bytes_per_s=50e9))
    first, last = faulty.counters
    rx1 = sum(c.rx_bytes or 0 for c in last.links if c.gpu == 1) - sum(
        c.rx_bytes or 0 for c in first.links if c.gpu == 1)
    probe_into_1 = sum(25 * r.bytes_per_copy for r in faulty.results
                       if r.test is TestName.CE_WRITE and r.dst == 1)
    assert rx1 > probe_into_1  # the foreign job's bytes are on GPU 1's counters too
    contended: list[TransferResult] = [r for r in faulty.results if r.contended]
    assert contended and all(r.foreign_bytes > 1 << 20 for r in contended)
    assert any((r.test, r.src, r.dst) == (TestName.CE_WRITE, 0, 1) for r in contended)


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_busy_gpu(preset: str) -> None:
    _, faulty = _report(preset, BusyGpu(gpu=0))
    assert [s.gpu for s in faulty.cost.skipped] == [0]
    assert not any(0 in {r.src, r.dst} or 0 in r.gpus for r in faulty.results)
    [act] = [a for a in faulty.counters[0].activity if a.gpu == 0]
    assert act.compute_processes == 1

