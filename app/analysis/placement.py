"""Placement: the best k healthy GPUs of one host for a collective, judged from measurements.

Pure functions, no database: the caller (the scheduler route) hands in the host's GPUs with
their health, the measured per-pair bandwidth (bytes/s per direction, ordered pairs; the latest
uncontended `ce_write`, or `ce_bidir / 2`), and optionally the expected bandwidth from topology,
the kind of each pair's path and the per-pair verdicts. `place()` answers with the chosen GPUs,
the predicted bandwidth, a `CUDA_VISIBLE_DEVICES` string, runner-up sets and a reason for every
GPU left out.

Models
------
ring (ring all-reduce, what NCCL runs for all-reduce on one host): every GPU sends to its ring
successor at the same time and the ring moves at the pace of its slowest link, so a set's
predicted *bus bandwidth* (nccl-tests' busbw, independent of k) is

    max over ring orders of  min over ring links (a, b) of  bw(a, b) x R(kind of a-b)

where bw(a, b) is the slower of the two directions (NCCL runs rings in both orientations over
its channels) and R is all-reduce over CE efficiency from `expected.py`: 0.69 / 0.83 = 0.83 on
NVLink (measured on the H200 pair: 328 GB/s busbw against 396 GB/s CE), 0.60 / 0.80 = 0.75 on
PCIe (also used when the kind is unknown: the cautious choice). The order matters: on a 4-GPU
NVLink mesh with PCIe diagonals, ring 0-1-3-2 runs on NVLink and 0-1-2-3 does not. The search is
exact (every set, every order, pruned) while C(n, k) <= 5000 and k <= 8, greedy beyond (the
answer says which). Not modelled: rings that share one link (several PCIe hops through one
socket-to-socket bridge), which the per-pair tests cannot see.

all_to_all: every GPU sends an equal chunk to each of the k-1 others at once. A pair's chunk
cannot go faster than that pair's bandwidth, and all of a GPU's chunks share its ports, so the
predicted *per-GPU all-to-all bandwidth* (bytes each GPU sends per second) is

    min( (k-1) x slowest ordered pair in the set,  min over GPUs of egress and ingress )

egress(g) = sum over direct-NVLink peers in the set (separate links add up) + the fastest
NVSwitch peer (every switched pair shares the GPU's same links: one pair measures all of it) +
the fastest PCIe peer (one PCIe link). It is a copy-engine bound: no further efficiency factor.

Missing data: a pair without a measurement falls back to the expected bandwidth from topology
and is listed in `estimated_pairs` (the answer warns); a pair with neither, or whose verdict is
`down`, is unusable (bandwidth 0) -- a ring may route around it, an all-to-all set holding it
predicts 0. Unhealthy GPUs are never candidates.

Ties: measurements are noisy, so sets predicting within `tie_tolerance` (5%) of the best are
equally good; among them the set on fewer CPU sockets / NUMA nodes wins, then the one resting on
fewer estimated pairs, then the lower GPU indexes. The same inputs always give the same answer.
"""

from __future__ import annotations

from collections.abc import Callable

from peerwatch.app.analysis import placement_search as search
from peerwatch.app.analysis.pair_faults import apart_among, compatible, largest_set
from peerwatch.app.analysis.placement_explain import answer, kept_apart, left_out
from peerwatch.app.analysis.placement_measured import with_measured
from peerwatch.app.analysis.placement_problem import Problem, tie_key
from peerwatch.app.analysis.placement_types import (
    MODELS,
    CandidateSet,
    Exclusion,
    FabricView,
    GpusKeptApart,
    GpuState,
    LinkKind,
    NotEnoughHealthyGpus,
    Pair,
    PairVerdict,
    Pattern,
    Placement,
    PlacementError,
)

RUNNER_UPS = 3
TIE_TOLERANCE = 0.05

__all__ = [
    "MODELS", "CandidateSet", "Exclusion", "FabricView", "GpuState", "LinkKind",
    "NotEnoughHealthyGpus", "Pair", "PairVerdict", "Pattern", "Placement", "PlacementError",
    "parse_pattern", "place",
]


def parse_pattern(pattern: str | Pattern) -> Pattern:
    try:
        return Pattern(pattern)
    except ValueError:
        known = ", ".join(p.value for p in Pattern)
        raise PlacementError(f"unknown pattern {pattern!r}; use one of: {known}") from None


def place(
    view: FabricView,
    k: int,
    pattern: str | Pattern = Pattern.RING,
    runner_ups: int = RUNNER_UPS,
    tie_tolerance: float = TIE_TOLERANCE,
) -> Placement:
    """Choose the best `k` healthy GPUs of `view` for `pattern`; see the module docstring.

    Raises PlacementError for k < 1 or an unknown pattern, NotEnoughHealthyGpus (a
    PlacementError) when fewer than k GPUs are healthy.
    """
    pat = parse_pattern(pattern)
    if k < 1:
        raise PlacementError(f"gpus must be at least 1, got {k}")
    gpus = sorted(view.gpus, key=lambda g: g.index)
    healthy = [g for g in gpus if g.healthy]
    if k > len(healthy):
        raise NotEnoughHealthyGpus(k, [g.index for g in healthy], len(gpus))
    apart = _check_apart(view, healthy, k, len(gpus))
    problem = Problem.build(view, healthy)
    exact = k == 1 or search.is_exact(len(healthy), k, pat is Pattern.RING)
    scored = _score_sets(problem, k, pat, exact, tie_tolerance, _positions(healthy, apart))
    ranked = _rank(problem, scored, tie_tolerance)
    chosen = ranked[0]
    band_floor = max(s.value for s in scored) * (1 - tie_tolerance)
    excluded = [
        Exclusion(g.index, False, f"GPU{g.index} is not healthy: {g.reason or 'no reason given'}")
        for g in gpus
        if not g.healthy
    ] + kept_apart(left_out(problem, chosen, ranked, band_floor, pat, tie_tolerance),
                   [problem.index(m) for m in chosen.members], apart)
    return with_measured(view, answer(problem, pat, k, chosen, ranked[1 : 1 + runner_ups],
                                      excluded, exact))


# --------------------------------------------------------------------------- internals


def _check_apart(view: FabricView, healthy: list[GpuState], k: int, total: int) -> list[Pair]:
    """The pair faults among the healthy GPUs; GpusKeptApart when they leave fewer than `k`
    that may share a job."""
    indexes = [g.index for g in healthy]
    apart = apart_among(indexes, view.apart)
    if apart:
        largest = largest_set(indexes, apart)
        if k > len(largest):
            raise GpusKeptApart(k, indexes, total, apart, largest)
    return apart


def _positions(healthy: list[GpuState], apart: list[Pair]) -> list[Pair]:
    at = {g.index: pos for pos, g in enumerate(healthy)}
    return [(at[a], at[b]) for a, b in apart]


def _score_sets(
    prob: Problem, k: int, pat: Pattern, exact: bool, tol: float, apart: list[Pair]
) -> list[search.Scored]:
    """Every candidate set scored (exact) or grown greedily, none holding a pair of `apart`
    (positions): the two GPUs of a pair fault never share a set."""
    scored, score = _scored_sets(prob, k, pat, exact, tol, apart)
    if not apart:
        return scored
    kept = [s for s in scored if compatible(s.members, apart)]
    if not kept:  # the greedy growth met pair faults everywhere: the largest set will do
        kept = [score(tuple(largest_set(range(len(prob.gpus)), apart)[:k]))]
    return kept


def _scored_sets(
    prob: Problem, k: int, pat: Pattern, exact: bool, tol: float, apart: list[Pair]
) -> tuple[list[search.Scored], Callable[[tuple[int, ...]], search.Scored]]:
    n = len(prob.gpus)
    if k == 1:
        return [search.Scored((p,), 0.0, None) for p in range(n)], \
            lambda m: search.Scored(m, 0.0, None)
    if pat is Pattern.RING:
        sym = prob.ring_matrix()
        def score(members: tuple[int, ...]) -> search.Scored:
            if k <= search.EXACT_RING_K:
                return search.best_ring_exact(members, sym, tol)
            return search.best_ring_heuristic(members, sym)

        def affinity(members: list[int], c: int) -> float:
            ws = sorted((sym[c][m] for m in members), reverse=True)
            return ws[1] if len(ws) > 1 else ws[0]
    else:

        ports = prob.port_codes()

        def score(members: tuple[int, ...]) -> search.Scored:
            return search.all_to_all_value(members, prob.w, ports)

        def affinity(members: list[int], c: int) -> float:
            return min(min(prob.w[c][m], prob.w[m][c]) for m in members)

    if exact:
        return search.all_sets(n, k, score), score
    if apart:  # a greedy set never grows into a pair fault
        near = affinity

        def affinity(members: list[int], c: int) -> float:
            return near(members, c) if compatible([*members, c], apart) else float("-inf")

    def prefer(members: list[int], c: int) -> tuple[int, ...]:
        same = prob.gpus[c].locality == prob.gpus[members[0]].locality
        return (0 if same else 1, c)

    return search.grown_sets(n, k, affinity, score, prefer, tol), score


def _rank(prob: Problem, scored: list[search.Scored], tol: float) -> list[search.Scored]:
    """Best first: every set within `tol` of the best is a tie, settled by `tie_key`."""
    floor = max(s.value for s in scored) * (1 - tol)

    def key(s: search.Scored) -> tuple[int, float, tuple[int, int, tuple[int, ...]]]:
        return (0, 0.0, tie_key(prob, s)) if s.value >= floor else (1, -s.value, tie_key(prob, s))

    return sorted(scored, key=key)


