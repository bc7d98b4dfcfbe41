"""Pair faults: two GPUs that must not share a job, though each works with its other peers.

Attribution (`attribution.py`) leaves a bad pair explained by no GPU as its own object at
fault: copies failing or slow between two GPUs whose other pairs work, or P2P lost between
them. Such a fault belongs to the pair, not to either GPU: both GPUs stay healthy
and offerable, but never in the same job. This module says which pairs those are, one per
unordered pair (`a` < `b`), and which largest set of GPUs a job may then use together. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from peerwatch.app.analysis.attribution import own_fault
from peerwatch.app.analysis.health import PairJudgement
from peerwatch.app.analysis.verdict import Verdict

Pair = tuple[int, int]
COPIES_FAIL, SLOW, P2P_LOST = "copies_fail", "slow", "p2p_lost"
KIND_WORDS = {COPIES_FAIL: "copies fail between them", SLOW: "copies run slow between them",
              P2P_LOST: "P2P lost between them"}
FACT = "pair_fault"  # the key of a pair row's facts that names its kind
EXACT_LIMIT = 16  # GPUs in pair faults up to which the largest set is searched exactly


@dataclass(frozen=True)
class PairFault:
    """One unordered pair at fault as a pair: `a` < `b`, its kind, and the worst reason."""

    a: int
    b: int
    kind: str  # copies_fail | slow | p2p_lost
    reason: str

    @property
    def pair(self) -> Pair:
        return (self.a, self.b)

    @property
    def words(self) -> str:
        return f"GPU{self.a} and GPU{self.b} kept apart ({KIND_WORDS[self.kind]})"


def _failing(p: PairJudgement) -> bool:
    return p.verdict is Verdict.DOWN or any(
        t.latest is not None and t.latest.error is not None for t in p.tests)


def _kind(directions: Sequence[PairJudgement]) -> str:
    if any(p.cause is not None for p in directions):
        return P2P_LOST  # P2P unavailable: P2PAccessLost's page
    return COPIES_FAIL if any(_failing(p) for p in directions) else SLOW


def pair_faults(pairs: Iterable[PairJudgement]) -> list[PairFault]:
    """Every unordered pair with a direction at fault as a pair, by (a, b)."""
    by_pair: dict[Pair, list[PairJudgement]] = {}
    for p in pairs:
        if p.src != p.dst and own_fault(p):
            by_pair.setdefault((min(p.src, p.dst), max(p.src, p.dst)), []).append(p)
    out = []
    for (a, b), directions in sorted(by_pair.items()):
        worst = max(directions, key=lambda p: (p.verdict is Verdict.DOWN, _failing(p)))
        out.append(PairFault(a, b, _kind(directions), worst.reason))
    return out


def fault_facts(pairs: Iterable[PairJudgement]) -> dict[Pair, dict[str, str]]:
    """What each ordered pair row at fault keeps (`{"pair_fault": kind}`): the kind of its
    unordered pair, so that readers of one row (`/metrics`, the scheduler) agree."""
    pairs = list(pairs)
    kinds = {f.pair: f.kind for f in pair_faults(pairs)}
    return {(p.src, p.dst): {FACT: kinds[(min(p.src, p.dst), max(p.src, p.dst))]}
            for p in pairs if p.src != p.dst and own_fault(p)}


def stored_faults(rows: Iterable[tuple[int, int, Mapping[str, Any] | None]]
                  ) -> dict[Pair, str]:
    """{(a, b): kind} from stored pair rows (src, dst, facts), one per unordered pair."""
    out: dict[Pair, str] = {}
    for src, dst, facts in rows:
        kind = (facts or {}).get(FACT)
        if kind:
            out.setdefault((min(src, dst), max(src, dst)), str(kind))
    return out


def apart_among(gpus: Iterable[int], apart: Iterable[Pair]) -> list[Pair]:
    """The pairs of `apart` whose two GPUs are both in `gpus` (the others cannot meet)."""
    have = set(gpus)
    return sorted({(min(a, b), max(a, b)) for a, b in apart if a in have and b in have})


def compatible(members: Iterable[int], apart: Iterable[Pair]) -> bool:
    """No pair of `apart` has both its GPUs in `members`."""
    have = set(members)
    return not any(a in have and b in have for a, b in apart)


def largest_set(gpus: Sequence[int], apart: Iterable[Pair]) -> list[int]:
    """The largest set of `gpus` holding no pair of `apart` (ties: the lowest indexes), in
    index order. Exact while at most EXACT_LIMIT GPUs are in pair faults (a host has eight),
    greedy beyond: the GPU in the most faults leaves first."""
    pairs = apart_among(gpus, apart)
    if not pairs:  # most hosts: no pair fault among these GPUs
        return sorted(gpus)
    involved = sorted({g for p in pairs for g in p})
    free = [g for g in gpus if g not in involved]
    if len(involved) > EXACT_LIMIT:
        return sorted(free + _greedy(involved, pairs))
    return sorted(free + _exact(involved, pairs))


def _neighbours(pairs: Sequence[Pair]) -> dict[int, set[int]]:
    out: dict[int, set[int]] = {}
    for a, b in pairs:
        out.setdefault(a, set()).add(b)
        out.setdefault(b, set()).add(a)
    return out


def _exact(involved: Sequence[int], pairs: Sequence[Pair]) -> list[int]:
    """Maximum independent set by branching on the lowest GPU: take it (its partners
    leave) or leave it. Taking first, so among equal sizes the lowest indexes win."""
    near = _neighbours(pairs)
    best: list[int] = []

    def grow(rest: list[int], taken: list[int]) -> None:
        nonlocal best
        if len(taken) + len(rest) <= len(best):
            return
        if not rest:
            best = taken
            return
        g, tail = rest[0], rest[1:]
        grow([x for x in tail if x not in near[g]], [*taken, g])
        grow(tail, taken)

    grow(list(involved), [])
    return best


def _greedy(involved: Sequence[int], pairs: Sequence[Pair]) -> list[int]:
    near = _neighbours(pairs)
    kept = set(involved)
    while True:
        degree = {g: len(near[g] & kept) for g in kept}
        worst = max(sorted(kept, reverse=True), key=lambda g: degree[g])
        if degree[worst] == 0:
            return sorted(kept)
        kept.remove(worst)
