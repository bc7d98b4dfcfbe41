"""The sweep engine over simulated hosts: complete, deterministic, and honest about faults."""

from __future__ import annotations

import itertools

import pytest

from peerwatch.probes.errors import BadProbeRequest
from peerwatch.probes.report import (
    GPU_TESTS,
    PAIR_TESTS,
    Report,
    ReportKind,
    TestName,
    TransferResult,
)
from peerwatch.probes.sim.faults import BusyGpu, Contention, TransferFails, TransferHangs
from peerwatch.probes.sim.presets import PRESET_NAMES
from peerwatch.probes.sim.simulated import SimulatedFabric
from peerwatch.probes.sweep import SweepOptions, SweepProgress, build_report, run_sweep
from peerwatch.probes.test_kinds import kind_of

Pair = tuple[int | None, int | None]


def _by_pair(results: list[TransferResult], test: TestName) -> dict[Pair, TransferResult]:
    return {(r.src, r.dst): r for r in results if r.test is test}


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_a_healthy_host_gets_every_pair_and_test(preset: str) -> None:
    fab = SimulatedFabric(preset, seed=1)
    report = build_report(fab)
    n = fab.gpu_count()
    pairs = set(itertools.permutations(range(n), 2))
    for test in PAIR_TESTS:
        got = _by_pair(report.results, test)
        assert set(got) == pairs, test
        assert all(r.error is None and r.value and not r.contended for r in got.values())
    for test in GPU_TESTS:
        got = {r.src: r for r in report.results if r.test is test}
        assert set(got) == set(range(n)) and all(r.dst is None and r.value and r.verified
                                                   for r in got.values()), test
    [allreduce] = [r for r in report.results if r.test is TestName.ALLREDUCE]
    assert allreduce.gpus == list(range(n)) and allreduce.value
    assert report.errors == [] and report.cost.skipped == []
    assert report.cost.gpu_time_s == pytest.approx(sum(r.gpu_time_s for r in report.results))
    assert len(report.counters) == 2 and len(report.inventory.pairs) == len(pairs)
    assert Report.model_validate_json(report.model_dump_json()) == report


def test_the_same_seed_gives_the_same_numbers_and_another_seed_does_not() -> None:
    def values(seed: int) -> list[float | None]:
        opts = SweepOptions(tests=(TestName.CE_WRITE, TestName.LATENCY))
        return [r.value for r in run_sweep(SimulatedFabric("mesh4", seed=seed), opts).results]

    assert values(5) == values(5)
    assert values(5) != values(6)


def test_an_inventory_report_runs_no_tests() -> None:
    report = build_report(SimulatedFabric("hgx8"), ReportKind.INVENTORY)
    assert report.results == [] and len(report.counters) == 1
    assert len(report.inventory.gpus) == 8 and len(report.inventory.nvlinks) == 8 * 18


def test_selected_gpus_and_tests_only() -> None:
    opts = SweepOptions(tests=(TestName.SM_READ, TestName.ALLREDUCE), gpus=(1, 4, 6))
    results = run_sweep(SimulatedFabric("hgx8"), opts).results
    assert {(r.src, r.dst) for r in results if r.test is TestName.SM_READ} == set(
        itertools.permutations((1, 4, 6), 2))
    assert [r.gpus for r in results if r.test is TestName.ALLREDUCE] == [[1, 4, 6]]
    assert {r.test for r in results} == {TestName.SM_READ, TestName.ALLREDUCE}


def test_an_unknown_gpu_is_a_bad_request_naming_it() -> None:
    with pytest.raises(BadProbeRequest, match="no GPU 9 on simulated:mesh4"):
        run_sweep(SimulatedFabric("mesh4"), SweepOptions(gpus=(0, 9)))


def test_progress_is_reported_for_every_planned_test() -> None:
    seen: list[SweepProgress] = []
    run_sweep(SimulatedFabric("pcie4"), SweepOptions(tests=(TestName.CE_WRITE,)),
              progress=seen.append)
    assert [p.done for p in seen] == list(range(1, 13)) and {p.total for p in seen} == {12}


def test_contention_is_labelled_with_foreign_bytes_and_only_where_it_is() -> None:
    fab = SimulatedFabric("hgx8", seed=2, faults=[Contention(gpu=0, peer=1)])
    healthy = _by_pair(run_sweep(SimulatedFabric("hgx8", seed=2),
                                 SweepOptions(tests=(TestName.CE_WRITE,))).results,
                       TestName.CE_WRITE)
    got = _by_pair(run_sweep(fab, SweepOptions(tests=(TestName.CE_WRITE,))).results,
                   TestName.CE_WRITE)
    for (s, d), r in got.items():
        shares_links = s == 0 or d == 1  # 0's TX or 1's RX carry the foreign copy
        assert r.contended is shares_links, (s, d)
        if shares_links:
            # the foreign job ran beside the probe for the whole window, at its share
            assert r.foreign_bytes > 0.5 * 25 * (64 << 20)
            assert r.value < 0.6 * healthy[(s, d)].value  # type: ignore[operator]
        else:
            assert r.foreign_bytes < 1 << 20
            assert r.value == pytest.approx(healthy[(s, d)].value, rel=0.03)


def test_a_failing_gpu_fails_only_its_own_pairs() -> None:
    fab = SimulatedFabric("mesh4", faults=[TransferFails(gpu=2)])
    results = run_sweep(fab).results
    for r in results:
        # an all-to-all runs every GPU at once: GPU 2 failing it fails it on every GPU
        involved = 2 in {r.src, r.dst} or 2 in r.gpus or kind_of(r.test).joint
        assert (r.error is not None) is involved, (r.test, r.src, r.dst)
    assert all("illegal memory access" in (r.error or "illegal memory access") for r in results)


def test_a_hung_transfer_is_cut_by_the_watchdog_and_the_rest_goes_on() -> None:
    fab = SimulatedFabric("pcie4", faults=[TransferHangs(gpu=3, test=TestName.CE_WRITE)])
    try:
        out = run_sweep(fab, SweepOptions(tests=(TestName.CE_WRITE, TestName.SM_WRITE),
                                          timeout_s=0.1))
    finally:
        fab.release_hangs()
    timed_out = [r for r in out.results if r.error and "did not finish within 0.1 s" in r.error]
    assert [(r.src, r.dst) for r in timed_out] == [(0, 3)]  # the first test touching GPU 3
    hung = {s.gpu: s.reason for s in out.cost.skipped}
    assert set(hung) == {0, 3} and all("hung" in why for why in hung.values())
    after = out.results[out.results.index(timed_out[0]) + 1:]
    ran = {(r.test, r.src, r.dst) for r in after if r.error is None}
    assert (TestName.SM_WRITE, 1, 2) in ran and (TestName.CE_WRITE, 2, 1) in ran
    assert not any({0, 3} & {r.src, r.dst} for r in after)


def test_busy_gpus_are_skipped_with_the_reason_unless_forced() -> None:
    fab = SimulatedFabric("h200x2", faults=[BusyGpu(gpu=1)])
    out = run_sweep(fab)
    assert {(r.test, r.src) for r in out.results} == {(t, 0) for t in GPU_TESTS}  # no a2a
    [skip] = out.cost.skipped
    assert skip.gpu == 1 and "1 compute process" in skip.reason and "97%" in skip.reason
    forced = run_sweep(fab, SweepOptions(tests=(TestName.CE_WRITE,), force=True))
    assert len(forced.results) == 2 and forced.cost.skipped == []


def test_a_one_gpu_host_gets_its_per_gpu_tests() -> None:
    """With one GPU selected there is no pair: h2d, d2h and local still run."""
    out = run_sweep(SimulatedFabric("h200x2", seed=1), SweepOptions(gpus=(1,)))
    assert [(r.test, r.src, r.dst) for r in out.results] == [(t, 1, None) for t in GPU_TESTS]
    assert all(r.error is None and r.value for r in out.results)
