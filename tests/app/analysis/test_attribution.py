"""`app/analysis/attribution.py` on plain pair verdicts: which object a bad pair blames."""

from __future__ import annotations

from datetime import UTC, datetime

from peerwatch.app.analysis.attribution import attribute, own_fault
from peerwatch.app.analysis.health import PairJudgement, Sample, TestJudgement
from peerwatch.app.analysis.verdict import Verdict
from peerwatch.probes.report import TestName

T0 = datetime(2026, 12, 1, 10, tzinfo=UTC)


def _pair(s: int, d: int, verdict: Verdict = Verdict.HEALTHY, error: str | None = None,
          cause: str | None = None) -> PairJudgement:
    test = TestJudgement(verdict, "t", s, d, TestName.CE_WRITE,
                         latest=Sample(T0, None if error else 1.0, error=error))
    return PairJudgement(verdict, f"GPU{s}->GPU{d} {verdict.value}", s, d, (test,),
                         cause=cause)


def _board(n: int, bad: set[frozenset[int]], verdict: Verdict = Verdict.DEGRADED,
           error: str | None = None) -> list[PairJudgement]:
    return [_pair(s, d, verdict, error) if frozenset((s, d)) in bad else _pair(s, d)
            for s in range(n) for d in range(n) if s != d]


def test_a_gpu_bad_with_every_peer_is_the_fault_even_on_its_first_failure() -> None:
    pairs = _board(4, {frozenset((2, b)) for b in (0, 1, 3)}, error="CUDA error")
    a = attribute(pairs, {})
    assert set(a.pattern) == {2} and a.pattern[2].failing  # failed once: still failing
    assert a.pattern[2].text.startswith("copies fail with every peer (3 of 3)")
    for p in a.pairs:
        assert p.explained_by == (2 if 2 in (p.src, p.dst) else None)
    assert "explained by GPU2, whose copies fail with every peer" in a.pairs[1].reason


def test_a_pair_is_its_own_fault_where_the_pattern_cannot_single_out_a_gpu() -> None:
    two = attribute(_board(2, {frozenset((0, 1))}), {})  # one peer: no pattern
    assert not two.pattern and all(own_fault(p) for p in two.pairs)
    four = attribute(_board(4, {frozenset((0, 1))}), {})
    assert not four.pattern
    assert {(p.src, p.dst) for p in four.pairs if own_fault(p)} == {(0, 1), (1, 0)}


def test_every_gpu_bad_with_every_peer_blames_every_gpu() -> None:
    every = {frozenset((s, d)) for s in range(3) for d in range(3) if s != d}
    a = attribute(_board(3, every), {})
    assert set(a.pattern) == {0, 1, 2} and not any(f.failing for f in a.pattern.values())


def test_an_untrusting_gpu_makes_its_pairs_non_healthy_and_blames_only_itself() -> None:
    a = attribute(_board(4, set()), {3: "fabric in progress"})
    through = [p for p in a.pairs if 3 in (p.src, p.dst)]
    assert {p.verdict for p in through} == {Verdict.DEGRADED}
    assert {p.explained_by for p in through} == {3}
    assert through[0].reason.startswith(
        f"GPU{through[0].src}->GPU{through[0].dst} not trusted: GPU3 fabric in progress")
    assert {p.verdict for p in a.pairs if 3 not in (p.src, p.dst)} == {Verdict.HEALTHY}
    assert not a.pattern  # GPU3's pairs are its fault already, no pattern on top


def test_p2p_lost_pairs_stay_pair_faults_even_around_one_gpu() -> None:
    pairs = [_pair(s, d, Verdict.DEGRADED, cause="P2P unavailable") if 1 in (s, d)
             else _pair(s, d) for s in range(3) for d in range(3) if s != d]
    a = attribute(pairs, {})
    assert not a.pattern  # P2PAccessLost is the page, per pair
    assert all(p.explained_by is None for p in a.pairs)
