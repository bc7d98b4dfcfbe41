"""`app/analysis/pair_faults.py`: which pairs are at fault as pairs (one per unordered pair,
of which kind), and the largest set of GPUs that may share a job around them."""

from __future__ import annotations

from datetime import UTC, datetime
from itertools import combinations

import pytest

from peerwatch.app.analysis.health import PairJudgement, Sample, TestJudgement
from peerwatch.app.analysis.pair_faults import (
    COPIES_FAIL,
    P2P_LOST,
    SLOW,
    apart_among,
    compatible,
    fault_facts,
    largest_set,
    pair_faults,
    stored_faults,
)
from peerwatch.app.analysis.verdict import Verdict
from peerwatch.probes.report import TestName

AT = datetime(2026, 12, 1, tzinfo=UTC)


def pair(src: int, dst: int, verdict: Verdict = Verdict.HEALTHY, error: str | None = None,
         explained_by: int | None = None, cause: str | None = None) -> PairJudgement:
    test = TestJudgement(verdict, f"GPU{src}->GPU{dst} ce_write", src, dst, TestName.CE_WRITE,
                         latest=Sample(at=AT, value=None if error else 1e11, error=error))
    return PairJudgement(verdict, f"GPU{src}->GPU{dst} {verdict.value}", src, dst, (test,),
                         explained_by, cause)


def test_one_fault_per_unordered_pair_with_its_kind() -> None:
    pairs = [pair(0, 1), pair(1, 0),
             pair(2, 5, Verdict.DEGRADED, error="CUDA error"), pair(5, 2, Verdict.DOWN),
             pair(3, 4, Verdict.DEGRADED),  # slow one way only: still the pair's fault
             pair(6, 7, Verdict.DEGRADED, cause="P2P unavailable"),
             pair(7, 6, Verdict.DEGRADED, cause="P2P unavailable")]
    found = pair_faults(pairs)
    assert [(f.a, f.b, f.kind) for f in found] == [(2, 5, COPIES_FAIL), (3, 4, SLOW),
                                                   (6, 7, P2P_LOST)]
    assert found[0].reason == "GPU5->GPU2 down"  # the worst direction's words
    assert "GPU2 and GPU5 kept apart (copies fail between them)" == found[0].words


def test_a_pair_explained_by_a_gpu_is_no_pair_fault() -> None:
    pairs = [pair(0, 3, Verdict.DOWN, error="x", explained_by=3),
             pair(1, 3, Verdict.DEGRADED, explained_by=3, cause="GPU3 fabric in progress"),
             pair(0, 1, Verdict.UNKNOWN)]
    assert pair_faults(pairs) == []
    assert fault_facts(pairs) == {}


def test_fault_facts_name_the_unordered_kind_on_each_row_at_fault() -> None:
    pairs = [pair(2, 5, Verdict.DEGRADED, error="x"), pair(5, 2, Verdict.DEGRADED)]
    facts = fault_facts(pairs)
    assert facts == {(2, 5): {"pair_fault": COPIES_FAIL}, (5, 2): {"pair_fault": COPIES_FAIL}}
    rows = [(s, d, f) for (s, d), f in facts.items()] + [(0, 1, None), (1, 0, {"cause": "y"})]
    assert stored_faults(rows) == {(2, 5): COPIES_FAIL}


def test_the_largest_set_leaves_one_end_of_each_fault_out() -> None:
    assert largest_set(range(8), []) == list(range(8))
    assert largest_set(range(8), [(2, 5)]) == [0, 1, 2, 3, 4, 6, 7]  # the lower end stays
    # GPU3 at fault with 1 and 6: leaving 3 alone keeps seven, not six
    assert largest_set(range(8), [(1, 3), (3, 6)]) == [0, 1, 2, 4, 5, 6, 7]
    # a triangle: one of its three stays
    assert largest_set(range(4), [(0, 1), (1, 2), (0, 2)]) == [0, 3]
    assert largest_set([4, 5, 6], [(0, 1), (5, 6)]) == [4, 5]  # pairs elsewhere ignored


@pytest.mark.parametrize("apart", [
    [(0, 1), (2, 3), (4, 5), (6, 7)], [(0, 1), (1, 2), (2, 3), (3, 4), (4, 0)],
    [(0, 7), (1, 7), (2, 7), (3, 6), (4, 6)], [(a, b) for a, b in combinations(range(5), 2)],
])
def test_the_largest_set_is_as_large_as_any_compatible_set(apart: list[tuple[int, int]]
                                                           ) -> None:
    """Checked against every subset of eight GPUs."""
    got = largest_set(range(8), apart)
    assert compatible(got, apart)
    best = max(len(s) for k in range(9) for s in combinations(range(8), k)
               if compatible(s, apart))
    assert len(got) == best


def test_many_gpus_in_faults_fall_back_to_a_greedy_compatible_set() -> None:
    apart = [(i, i + 1) for i in range(0, 40, 2)]  # 40 GPUs in faults: past the exact search
    got = largest_set(range(40), apart)
    assert compatible(got, apart) and len(got) == 20


def test_apart_among_keeps_the_pairs_whose_gpus_are_both_there() -> None:
    assert apart_among([0, 1, 2, 5], [(5, 2), (0, 7), (1, 0)]) == [(0, 1), (2, 5)]
