"""All-to-all on the simulated fabric: run once per sweep, one result per GPU, figures that
follow the topology (NVSwitch: near a GPU's full NVLink bandwidth; PCIe: its shared link
split among its flows) and the faults (a degraded link lowers the GPUs whose flows cross it;
a GPU that hangs the all-to-all fails it on every GPU within the watchdog's limit)."""

from __future__ import annotations

import time

import pytest

from peerwatch.app.cli.bench_expect import Expectations
from peerwatch.probes.agent.passes import sweep_options
from peerwatch.probes.budgets import DEFAULT_BUDGETS
from peerwatch.probes.config import ProbeSettings
from peerwatch.probes.report import TestName, default_tests
from peerwatch.probes.sim.faults import BandwidthFactor, BusyGpu, Contention, TransferHangs
from peerwatch.probes.sim.presets import PRESET_NAMES
from peerwatch.probes.sim.simulated import SimulatedFabric
from peerwatch.probes.sweep import SweepOptions, build_report, plan, run_sweep

A2A = (TestName.A2A_CE, TestName.A2A_NCCL)


def _figures(fabric: SimulatedFabric, *tests: TestName) -> dict[tuple[str, int], float]:
    out = run_sweep(fabric, SweepOptions(tests=tests or A2A, timeout_s=None))
    assert all(r.error is None for r in out.results), out.results
    return {(r.test.value, r.src): r.value or 0.0 for r in out.results if r.src is not None}


def test_it_runs_once_per_sweep_and_gives_one_result_per_gpu() -> None:
    specs = plan(A2A, [0, 1, 2, 3], DEFAULT_BUDGETS)
    assert [(s.test, s.gpus) for s in specs] == [(t, (0, 1, 2, 3)) for t in A2A]
    assert plan(A2A, [0], DEFAULT_BUDGETS) == []  # one GPU: no all-to-all
    fab = SimulatedFabric("hgx8")
    out = run_sweep(fab, SweepOptions(tests=A2A, timeout_s=None))
    assert sorted((r.test.value, r.src, r.dst) for r in out.results) == sorted(
        (t.value, g, None) for t in A2A for g in range(8))
    run_time = sum(r.gpu_time_s for r in out.results)
    assert out.cost.gpu_time_s == pytest.approx(run_time)  # the run counted once, shared
    assert 3e-3 < run_time / 2 < 6e-3  # each run about 4.6 ms on hgx8


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_a_healthy_board_measures_what_the_server_expects(preset: str) -> None:
    report = build_report(SimulatedFabric(preset, seed=4),
                          options=SweepOptions(tests=A2A, timeout_s=None))
    judge = Expectations(report.inventory)
    for r in report.results:
        j = judge.judge(r)
        assert j.ratio is not None and 0.9 < j.ratio < 1.1, (preset, r.test, r.src, j)


def test_nvswitch_gives_near_full_bandwidth_and_pcie_contends() -> None:
    """hgx8: a GPU sends to 7 peers at once at 0.75 of its 478 GB/s, about what one pair
    copy reaches; pcie4: its one PCIe link carries its 3 flows each way (some staged through
    host memory), so it sends less in all than one pair copy and each flow far less."""
    for preset, low, high, per_flow in (("hgx8", 0.85, 1.0, 0.2), ("pcie4", 0.6, 0.85, 0.3)):
        fab = SimulatedFabric(preset, seed=1)
        a2a = _figures(fab, TestName.A2A_CE)[("a2a_ce", 0)]
        single = run_sweep(fab, SweepOptions(tests=(TestName.CE_WRITE,), gpus=(0, 1),
                                             timeout_s=None)).results[0].value or 0.0
        peers = len(fab.preset.gpus) - 1
        assert low < a2a / single < high, (preset, a2a, single)
        assert a2a / peers / single < per_flow, (preset, a2a, single)


def test_a_degraded_link_lowers_its_gpus_only() -> None:
    healthy = _figures(SimulatedFabric("hgx8", seed=1))
    slow = _figures(SimulatedFabric("hgx8", seed=1,
                                    faults=[BandwidthFactor(2, 5, 0.5, both_directions=False)]))
    ratio = {k: slow[k] / healthy[k] for k in healthy}
    assert 0.45 < ratio[("a2a_ce", 2)] < 0.55  # GPU2's sends wait for its flow to GPU5
    assert 0.45 < ratio[("a2a_nccl", 5)] < 0.55  # NCCL: GPU5 waits for what it receives
    assert 0.95 < ratio[("a2a_ce", 5)] < 1.05  # copy engines: GPU5's own sends are fine
    assert all(0.95 < v < 1.05 for (t, g), v in ratio.items() if g not in (2, 5))


def test_a_gpu_hanging_the_all_to_all_fails_it_everywhere_within_the_watchdog() -> None:
    """NVIDIA/nccl#1531: a dead GPU hangs NCCL's all-to-all. The sweep's watchdog turns the
    hang into a failed result on every GPU, never a wait, and leaves those GPUs alone."""
    fab = SimulatedFabric("mesh4", faults=[TransferHangs(gpu=3, test=TestName.A2A_NCCL)])
    started = time.monotonic()
    try:
        out = run_sweep(fab, SweepOptions(tests=(TestName.A2A_NCCL, TestName.A2A_CE),
                                          timeout_s=0.5))
    finally:
        fab.release_hangs()
    assert time.monotonic() - started < 60  # the hang was cut, not waited out
    failed = [r for r in out.results if r.test is TestName.A2A_NCCL]
    assert sorted(r.src for r in failed) == [0, 1, 2, 3]  # type: ignore[type-var]
    assert all(r.value is None and "did not finish within 0.5 s" in (r.error or "")
               for r in failed)
    assert not [r for r in out.results if r.test is TestName.A2A_CE]  # every GPU hung
    assert {s.gpu for s in out.cost.skipped} == {0, 1, 2, 3}


def test_a_busy_gpu_is_left_out_and_the_rest_run_it() -> None:
    out = run_sweep(SimulatedFabric("hgx8", faults=[BusyGpu(gpu=4)]),
                    SweepOptions(tests=(TestName.A2A_CE,), timeout_s=None))
    assert sorted(r.src for r in out.results) == [0, 1, 2, 3, 5, 6, 7]  # type: ignore[type-var]


def test_nvls_all_reduce_runs_only_where_the_operator_opted_in(
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert TestName.NVLS_ALLREDUCE not in default_tests()
    assert TestName.NVLS_ALLREDUCE in default_tests(nvls=True)
    assert set(default_tests()) >= set(A2A)
    off = sweep_options(ProbeSettings(token="t"))
    assert TestName.NVLS_ALLREDUCE not in off.tests
    monkeypatch.setenv("PEERWATCH_PROBE_NVLS", "true")
    on = sweep_options(ProbeSettings(token="t"))
    assert TestName.NVLS_ALLREDUCE in on.tests
    report = build_report(SimulatedFabric("hgx8"), options=SweepOptions(
        tests=(TestName.NVLS_ALLREDUCE,), timeout_s=None))
    [r] = report.results
    assert r.gpus == list(range(8)) and r.value and r.error is None


def test_a_foreign_job_on_the_links_marks_the_run_contended() -> None:
    """Another job sending GPU0 -> GPU1 during the all-to-all: the NVLink counters around
    the run show bytes that were not the probe's, so every GPU's figure is contended (shown,
    never judged), as for a pair test."""
    quiet = run_sweep(SimulatedFabric("hgx8"), SweepOptions(tests=(TestName.A2A_CE,),
                                                            timeout_s=None)).results
    busy = run_sweep(SimulatedFabric("hgx8", faults=[Contention(gpu=0, peer=1)]),
                     SweepOptions(tests=(TestName.A2A_CE,), timeout_s=None)).results
    assert not any(r.contended for r in quiet)
    assert all(r.contended and r.foreign_bytes > 0 for r in busy)
