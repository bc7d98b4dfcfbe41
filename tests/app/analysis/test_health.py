"""Pair verdicts: sustained lows are degraded, short dips and contended samples are not,
failures are down, and every verdict reads as a sentence."""

from __future__ import annotations

from dataclasses import fields, replace
from datetime import UTC, datetime, timedelta

from peerwatch.app.analysis.expected import Expectation
from peerwatch.app.analysis.health import (
    BaselineRef,
    Sample,
    TestJudgement,
    Thresholds,
    judge_pair,
    judge_test,
    p2p_problem,
)
from peerwatch.app.analysis.verdict import Verdict
from peerwatch.probes.report import PairInfo, PathLevel, TestName, Unit

T = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)
EXPECT = Expectation(397e9, Unit.BYTES_PER_SECOND, "NV18 x 26.6 GB/s x 0.83")
BASE = BaselineRef(388e9, 7 * 86_400)
TH = Thresholds(ratio_expected=0.7, ratio_baseline=0.8, sustain_s=1200)


def _series(*values: float | None, step_min: int = 10, **kw: object) -> list[Sample]:
    return [Sample(at=T + timedelta(minutes=step_min * i), value=v, **kw)  # type: ignore[arg-type]
            for i, v in enumerate(values)]


def test_sustained_low_is_degraded_with_the_reason_in_words() -> None:
    samples = _series(390e9, 212e9, 213e9, 212e9)
    j = judge_test(3, 5, TestName.CE_WRITE, samples, EXPECT, BASE, TH)
    assert j.verdict is Verdict.DEGRADED
    assert j.reason == ("GPU3->GPU5 ce_write 212 GB/s is 0.53 of expected 397 GB/s "
                        "(NV18 x 26.6 GB/s x 0.83) and 0.55 of its 7-day baseline, for 20 min")
    assert j.low_since == samples[1].at
    assert round(j.ratio_expected or 0, 2) == 0.53


def test_short_dip_is_still_healthy_but_said() -> None:
    j = judge_test(0, 1, TestName.CE_WRITE, _series(390e9, 390e9, 200e9), EXPECT, BASE, TH)
    assert j.verdict is Verdict.HEALTHY
    assert "low for 0 s, degraded after 20 min" in j.reason


def test_every_measurement_low_so_far_is_not_called_intermittent() -> None:
    """Three samples, all low, a minute apart (a new GPU test): degraded, and the reason says
    all were low, not "intermittent" (which is for a fault that comes and goes)."""
    j = judge_test(2, 2, TestName.CE_WRITE, _series(200e9, 201e9, 199e9, step_min=1),
                   EXPECT, BASE, TH)
    assert j.verdict is Verdict.DEGRADED
    assert j.reason.endswith("; low in all of the last 3 measurements")
    mixed = judge_test(2, 3, TestName.CE_WRITE,
                       _series(390e9, 200e9, 390e9, 200e9, 390e9, 200e9, step_min=1),
                       EXPECT, BASE, TH)
    assert mixed.reason.endswith("low in 3 of the last 6 measurements (intermittent)")


def test_low_against_baseline_alone_counts() -> None:
    """0.75 of expected passes the expectation, but 0.77 of its own baseline does not."""
    j = judge_test(0, 1, TestName.CE_WRITE, _series(298e9, 298e9, 298e9), EXPECT, BASE, TH)
    assert j.verdict is Verdict.DEGRADED
    assert "0.77 of its 7-day baseline" in j.reason


def test_contended_samples_never_make_a_pair_degraded() -> None:
    low_but_busy = [Sample(at=T + timedelta(minutes=10 * i), value=150e9, contended=True,
                           foreign_bytes=5 << 30) for i in range(1, 5)]
    j = judge_test(0, 1, TestName.CE_WRITE, [Sample(T, 390e9), *low_but_busy], EXPECT, BASE, TH)
    assert j.verdict is Verdict.HEALTHY
    assert "contended by 5.4 GB of other traffic, not judged" in j.reason
    only_busy = judge_test(0, 1, TestName.CE_WRITE, low_but_busy, EXPECT, BASE, TH)
    assert only_busy.verdict is Verdict.UNKNOWN


def test_repeated_failure_is_down_and_single_failure_degraded() -> None:
    ok_then_fail = [Sample(T, 390e9), Sample(T + timedelta(minutes=10), None, error="CUDA 700")]
    once = judge_test(0, 1, TestName.SM_READ, ok_then_fail, EXPECT, None, TH)
    assert once.verdict is Verdict.DEGRADED
    assert once.reason == "GPU0->GPU1 sm_read failed once: CUDA 700"
    twice = [*ok_then_fail, Sample(T + timedelta(minutes=20), None, error="CUDA 700")]
    assert judge_test(0, 1, TestName.SM_READ, twice, EXPECT, None, TH).verdict is Verdict.DOWN


def test_latency_higher_is_worse() -> None:
    expect = Expectation(0.85e-6, Unit.SECONDS, "NV18 peer latency")
    j = judge_test(0, 1, TestName.LATENCY, _series(2e-6, 2e-6, 2e-6), expect, None, TH)
    assert j.verdict is Verdict.DEGRADED
    assert j.reason.startswith("GPU0->GPU1 latency 2.00 µs is 0.43 of expected 0.85 µs")


def test_nothing_measured_is_unknown() -> None:
    assert judge_test(0, 1, TestName.CE_READ, [], EXPECT, None, TH).verdict is Verdict.UNKNOWN


def test_pair_takes_its_worst_test_and_flags_lost_p2p() -> None:
    good = judge_test(0, 1, TestName.CE_WRITE, _series(390e9), EXPECT, BASE, TH)
    bad = judge_test(0, 1, TestName.CE_READ, _series(100e9, 100e9, 100e9), EXPECT, BASE, TH)
    assert judge_pair(0, 1, [good, bad], None).verdict is Verdict.DEGRADED
    assert judge_pair(0, 1, [good], None).verdict is Verdict.HEALTHY
    no_p2p = PairInfo(src=0, dst=1, topology="NV18", pcie_path=PathLevel.PHB, nvlink_width=18,
                      can_access_peer=False)
    j = judge_pair(0, 1, [good], no_p2p)
    assert j.verdict is Verdict.DEGRADED
    assert "P2P is unavailable" in j.reason
    pcie_only = PairInfo(src=0, dst=1, topology="SYS", pcie_path=PathLevel.SYS,
                         can_access_peer=False)
    assert p2p_problem(pcie_only) is None


def test_a_fast_built_test_judgement_is_the_judgement_init_builds() -> None:
    """`judge_test` builds its verdicts without the frozen dataclass's __init__: each must
    compare, hash, print and replace as the one __init__ builds from the same fields."""
    for samples in (_series(390e9, 200e9, 200e9), _series(None, error="lost"), []):
        fast = judge_test(3, 5, TestName.CE_WRITE, samples, EXPECT, BASE, TH)
        plain = TestJudgement(**{f.name: getattr(fast, f.name) for f in fields(TestJudgement)})
        assert type(fast) is TestJudgement and vars(fast) == vars(plain)
        assert fast == plain and hash(fast) == hash(plain) and repr(fast) == repr(plain)
        assert replace(fast, reason="x") == replace(plain, reason="x")
