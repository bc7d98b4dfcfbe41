"""app/analysis/throttle.py: which samples were throttled, how a result is labelled, a slow
pair on a throttled GPU explained rather than called a fabric fault, and a GPU throttled in
most of its sweeps judged on its own."""

from __future__ import annotations

from datetime import UTC, datetime

from peerwatch.app.analysis.fabric_health import GpuJudgement
from peerwatch.app.analysis.health import PairJudgement, Sample, TestJudgement
from peerwatch.app.analysis.throttle import (
    SweepThrottle,
    explain_pairs,
    explain_tests,
    judge_throttled,
    newest,
    result_label,
    sweep_throttles,
    with_throttle_verdicts,
)
from peerwatch.app.analysis.verdict import Verdict
from peerwatch.probes.clocks import GpuClocks
from peerwatch.probes.report import TestName

AT = datetime(2026, 12, 1, 12, tzinfo=UTC)
IDLE = dict(reasons=0x1, power_mw=78_000, power_limit_mw=700_000, sm_clock_mhz=345,
            sm_clock_max_mhz=1980, violation_power_ns=10, violation_thermal_ns=10)


def clocks(gpu: int, **over: int) -> GpuClocks:
    return GpuClocks(gpu=gpu, **{**IDLE, **over})


def test_idle_app_clocks_and_sync_boost_are_not_throttles() -> None:
    quiet = [clocks(0), clocks(1, reasons=0x2), clocks(2, reasons=0x10), clocks(3, reasons=0)]
    assert sweep_throttles(quiet, quiet) == {}


def test_power_thermal_and_hw_at_either_end() -> None:
    before = [clocks(0, reasons=0x4, power_mw=449_000, power_limit_mw=450_000), clocks(1),
              clocks(2, reasons=0x8)]
    after = [clocks(0), clocks(1, reasons=0x40, temperature_c=88, slowdown_temperature_c=89),
             clocks(2)]
    found = sweep_throttles(before, after)
    assert found[0].kinds == ("power",) and "449 of 450 W" in found[0].detail
    assert found[1].kinds == ("thermal",) and "88 C (slowdown at 89 C)" in found[1].detail
    assert found[2].label() == "GPU2 in HW slowdown"


def test_a_violation_counter_rising_between_the_samples_counts() -> None:
    """Both instants look clear, but the power policy held the GPU during the sweep."""
    found = sweep_throttles([clocks(3)], [clocks(3, violation_power_ns=5_000_000)])
    assert found[3].kinds == ("power",)
    assert sweep_throttles([clocks(3)], [clocks(3)]) == {}


def test_results_are_labelled_with_the_throttled_gpus_they_touched() -> None:
    held = {3: SweepThrottle(3, ("power",)), 5: SweepThrottle(5, ("thermal", "hw"))}
    assert result_label((3, 0), held) == "GPU3 power-capped"
    assert result_label((5, 3), held) == ("GPU3 power-capped, GPU5 thermally throttled and "
                                          "in HW slowdown")
    assert result_label((0, 1), held) is None


def _test(src: int, dst: int, verdict: Verdict, error: str | None = None) -> TestJudgement:
    latest = Sample(AT, None if error else 200e9, error=error)
    return TestJudgement(verdict, f"GPU{src}->GPU{dst} ce_write 200 GB/s is 0.55 of expected",
                         src, dst, TestName.CE_WRITE, latest=latest, low_since=AT)


def test_a_slow_pair_on_a_power_capped_gpu_is_not_a_fabric_fault() -> None:
    now = {3: SweepThrottle(3, ("power",))}
    tests = {(3, 0, TestName.CE_WRITE): _test(3, 0, Verdict.DEGRADED),
             (0, 1, TestName.CE_WRITE): _test(0, 1, Verdict.DEGRADED),
             (3, 1, TestName.CE_WRITE): _test(3, 1, Verdict.DOWN, error="CUDA error")}
    out = explain_tests(tests, now)
    slow = out[(3, 0, TestName.CE_WRITE)]
    assert slow.verdict is Verdict.UNKNOWN and slow.low_since is None
    assert slow.reason.startswith("slow, GPU3 power-capped during the test")
    assert "0.55 of expected" in slow.reason
    assert out[(0, 1, TestName.CE_WRITE)].verdict is Verdict.DEGRADED  # no throttled GPU
    assert out[(3, 1, TestName.CE_WRITE)].verdict is Verdict.DOWN  # a failure stays one
    assert explain_tests(tests, {}) == tests


def test_a_pair_flagged_below_its_fleet_peers_is_explained_the_same() -> None:
    now = {3: SweepThrottle(3, ("power",))}
    healthy = _test(3, 0, Verdict.HEALTHY)
    peer = PairJudgement(Verdict.DEGRADED, "GPU3->GPU0 0.91 of its fleet peers' median", 3, 0,
                         (healthy,))
    p2p = PairJudgement(Verdict.DEGRADED, "GPU3->GPU0 has NV18 but P2P read disabled", 3, 0,
                        (healthy,))
    out = explain_pairs([peer, p2p], now)
    assert out[0].verdict is Verdict.UNKNOWN and "GPU3 power-capped" in out[0].reason
    assert out[1] is p2p


def test_k_of_n_sweeps_make_the_gpu_its_own_verdict() -> None:
    capped = SweepThrottle(2, ("power",), "449 of 450 W, SM 1386 of 1980 MHz")
    four_of_six = [capped, capped, None, capped, None, capped]
    j = judge_throttled(2, four_of_six, most=4, of=6)
    assert j is not None and j.verdict is Verdict.DEGRADED
    assert j.reason.startswith("GPU2 power-capped in 4 of its last 6 sweeps")
    assert "449 of 450 W" in j.reason and "action: check the enforced power limit" in j.reason
    assert judge_throttled(2, [capped, capped, None, capped, None, None], 4, 6) is None
    assert judge_throttled(2, [capped, capped, capped], 4, 6) is None  # too few sweeps yet
    assert judge_throttled(2, [None] * 6, 4, 6) is None
    mixed = [capped, SweepThrottle(2, ("thermal",))] * 2
    both = judge_throttled(2, mixed, 4, 6)
    assert both is not None and "power-capped and thermally throttled" in both.reason
    assert "check cooling" in both.reason


def test_gpu_verdicts_take_the_throttle_finding() -> None:
    capped = SweepThrottle(1, ("power",))
    history = {1: [capped] * 6, 0: [None] * 6}
    gpus = [GpuJudgement(Verdict.HEALTHY, "GPU0 healthy", 0),
            GpuJudgement(Verdict.HEALTHY, "GPU1 healthy", 1)]
    out = with_throttle_verdicts(gpus, history, 4, 6)
    assert out[0] == gpus[0]
    assert out[1].verdict is Verdict.DEGRADED and "power-capped in 6 of" in out[1].reason
    down = [GpuJudgement(Verdict.DOWN, "GPU1: 18/18 NVLinks down", 1)]
    kept = with_throttle_verdicts(down, history, 4, 6)[0]
    assert kept.verdict is Verdict.DOWN and kept.reason.startswith("GPU1: 18/18 NVLinks down; ")
    assert newest(history) == {1: capped}
