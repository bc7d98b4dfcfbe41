"""Placement's working form of one host: healthy GPUs as positions 0..n-1 and plain matrices.

Built once per question from a `FabricView`; the search (`placement_search.py`) reads its lists,
the ranking and the explanations read its helpers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from peerwatch.app.analysis import placement_search as search
from peerwatch.app.analysis.placement_types import (
    FabricView,
    GpuState,
    LinkKind,
    Pair,
    Pattern,
    ring_ratio,
)


@dataclass
class Problem:
    """The healthy GPUs as positions 0..n-1 with plain matrices, ready for the search."""

    gpus: list[GpuState]
    w: list[list[float]]  # usable bytes/s, position a -> position b
    kind: list[list[LinkKind | None]]
    estimated: set[tuple[int, int]]  # positions whose bandwidth came from topology
    unusable: set[tuple[int, int]]  # positions with no data at all, or verdict down
    _ring: list[list[float]] | None = field(default=None, repr=False)

    @classmethod
    def build(cls, view: FabricView, healthy: list[GpuState]) -> Problem:
        n = len(healthy)
        prob = cls(healthy, [[0.0] * n for _ in range(n)], [[None] * n for _ in range(n)],
                   set(), set())
        for a, ga in enumerate(healthy):
            for b, gb in enumerate(healthy):
                if a == b:
                    continue
                key = (ga.index, gb.index)
                prob.kind[a][b] = view.kinds.get(key) or view.kinds.get((gb.index, ga.index))
                verdict = view.pair_verdicts.get(key)
                if verdict is not None and verdict.verdict == "down":
                    prob.unusable.add((a, b))
                elif key in view.measured:
                    prob.w[a][b] = view.measured[key]
                elif view.expected.get(key):
                    prob.w[a][b] = view.expected[key]
                    prob.estimated.add((a, b))
                else:
                    prob.unusable.add((a, b))
        return prob

    def index(self, pos: int) -> int:
        return self.gpus[pos].index

    def ring_matrix(self) -> list[list[float]]:
        """Per link, what a ring over it reaches: slower direction x all-reduce/CE ratio."""
        if self._ring is None:
            n = len(self.gpus)
            self._ring = [
                [0.0 if a == b else min(self.w[a][b], self.w[b][a]) * ring_ratio(self.kind[a][b])
                 for b in range(n)]
                for a in range(n)
            ]
        return self._ring

    def weakest(self, s: search.Scored, pat: Pattern) -> tuple[int, int] | None:
        """The pair (positions) that limits set `s`."""
        if s.weakest is not None or len(s.members) < 2:
            return s.weakest
        if pat is Pattern.RING:
            return search.weakest_edge(s.members, self.ring_matrix())
        return min(((a, b) for a in s.members for b in s.members if a != b),
                   key=lambda p: self.w[p[0]][p[1]])

    def port_codes(self) -> list[list[int]]:
        """How each pair's traffic leaves its source, as all_to_all_value wants it."""
        code = {LinkKind.NVLINK: search.DIRECT, LinkKind.NVSWITCH: search.SHARED_SWITCH}
        return [[code.get(kind, search.SHARED_PCIE) if kind else search.SHARED_PCIE
                 for kind in row] for row in self.kind]

    def localities(self, members: Sequence[int]) -> int:
        return len({self.gpus[m].locality for m in members})

    def set_pairs(self, s: search.Scored, pat: Pattern) -> list[tuple[int, int]]:
        m = s.members
        if pat is Pattern.RING and len(m) > 1:
            edges = [(m[i], m[(i + 1) % len(m)]) for i in range(len(m))]
            return sorted({p for a, b in edges for p in ((a, b), (b, a))})
        return [(a, b) for a in m for b in m if a != b]

    def estimated_in(self, s: search.Scored, pat: Pattern) -> tuple[Pair, ...]:
        return tuple(
            (self.index(a), self.index(b)) for a, b in self.set_pairs(s, pat)
            if (a, b) in self.estimated
        )


def tie_key(prob: Problem, s: search.Scored) -> tuple[int, int, tuple[int, ...]]:
    """Among equally fast sets: fewer sockets, then fewer guessed pairs, then lower indexes."""
    est = 0
    if prob.estimated:
        est = sum(1 for p in s.members for q in s.members if (p, q) in prob.estimated)
    return (prob.localities(s.members), est, tuple(sorted(s.members)))


