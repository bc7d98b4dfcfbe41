"""The search behind placement: score GPU sets for a ring all-reduce or an all-to-all.

Works on positions 0..n-1 (the healthy GPUs, in index order) and plain lists of floats, so the
inner loops stay cheap: `w[a][b]` is the usable bandwidth a -> b in bytes/s (0 = unusable).
`app/analysis/placement.py` builds those lists and explains the models; this module only
searches. Exact where the number of (set, ring order) combinations is small, greedy beyond.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from itertools import combinations, permutations
from math import comb, factorial

Matrix = list[list[float]]

# Exhaustive search while the work (sets x ring orders x k for a ring, sets x k^2 for an
# all-to-all) stays below this, small enough for a scheduler hook's budget; greedy beyond.
# Rings of more than EXACT_RING_K GPUs are always ordered greedily.
EXACT_WORK_LIMIT = 40_000
EXACT_RING_K = 8
RING_TABLE_K = 6  # (k-1)!/2 = 60 orders: a table beats the depth-first search up to here
TWO_OPT_ROUNDS = 50


@dataclass(frozen=True)
class Scored:
    """One candidate set: members in ring order (ring) or index order, its value, weakest pair."""

    members: tuple[int, ...]
    value: float
    weakest: tuple[int, int] | None  # None: not worked out yet (see weakest_edge)


# --------------------------------------------------------------------------- ring


def ring_upper_bound(members: Sequence[int], sym: Matrix) -> float:
    """No ring through `members` beats this: every member needs two good neighbours."""
    bound = float("inf")
    for a in members:
        top1 = top2 = 0.0
        for b in members:
            if b != a:
                v = sym[a][b]
                if v > top1:
                    top1, top2 = v, top1
                elif v > top2:
                    top2 = v
        bound = min(bound, top2)
    return bound


def best_ring_exact(members: Sequence[int], sym: Matrix, tol: float = 0.0) -> Scored:
    """The ring order through `members` whose slowest link is fastest (bottleneck TSP).

    Small rings (k <= RING_TABLE_K) try every order from a precomputed table; larger ones go
    depth-first, pruning any partial ring no better than the best found and stopping once the
    upper bound is reached. Orders within `tol` of the best are ties (measurement noise must
    not turn the ring around): the lexicographically first of them wins.
    """
    k = len(members)
    if k == 2:
        a, b = members
        return Scored((a, b), sym[a][b], (a, b))
    if k <= RING_TABLE_K:
        return _best_ring_table(members, sym, tol)
    best = _best_ring_dfs(members, sym)
    if tol <= 0 or best.value <= 0:
        return best
    return _first_ring_at_least(members, sym, best.value * (1 - tol)) or best


def _best_ring_table(members: Sequence[int], sym: Matrix, tol: float) -> Scored:
    k = len(members)
    weights = [sym[members[i]][members[j]] for i, j in _pairs(k)]
    table = _ring_table(k)
    values = [min(map(weights.__getitem__, edges)) for _, edges in table]
    floor = max(values) * (1 - tol)
    pick = 0
    while values[pick] < floor:
        pick += 1
    # The weakest link is found later, only for the few sets that get reported.
    return Scored(tuple(members[i] for i in table[pick][0]), values[pick], None)


def _first_ring_at_least(members: Sequence[int], sym: Matrix, floor: float) -> Scored | None:
    """The lexicographically first ring whose every link reaches `floor`."""
    k = len(members)
    first, rest = members[0], list(members[1:])
    path = [first]

    def dfs(cur_min: float) -> float | None:
        last = path[-1]
        if len(path) == k:
            value = min(cur_min, sym[last][first])
            return value if path[1] < path[-1] and value >= floor else None
        for r in rest:
            if r in path or sym[last][r] < floor:
                continue
            path.append(r)
            found = dfs(min(cur_min, sym[last][r]))
            if found is not None:
                return found
            path.pop()
        return None

    value = dfs(float("inf"))
    return None if value is None else Scored(tuple(path), value, None)


@cache
def _pairs(k: int) -> tuple[tuple[int, int], ...]:
    return tuple(combinations(range(k), 2))


@cache
def _ring_table(k: int) -> tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]:
    """Every ring over positions 0..k-1 once (starts at 0, order[1] < order[-1]), with the
    indexes into `_pairs(k)` of its k links."""
    slot = {p: i for i, p in enumerate(_pairs(k))}
    table = []
    for rest in permutations(range(1, k)):
        if rest[0] > rest[-1]:
            continue
        order = (0, *rest)
        links = (tuple(sorted((order[i], order[(i + 1) % k]))) for i in range(k))
        table.append((order, tuple(slot[(a, b)] for a, b in links)))
    return tuple(table)


def _best_ring_dfs(members: Sequence[int], sym: Matrix) -> Scored:
    k = len(members)
    bound = ring_upper_bound(members, sym)
    first, rest = members[0], list(members[1:])
    best_value = -1.0
    best_order: list[int] = []
    path = [first]
    used = [False] * len(rest)

    def dfs(cur_min: float) -> bool:
        nonlocal best_value, best_order
        last = path[-1]
        if len(path) == k:
            value = min(cur_min, sym[last][first])
            if path[1] < path[-1] and value > best_value:  # one orientation per ring
                best_value, best_order = value, list(path)
            return best_value >= bound
        for i, r in enumerate(rest):
            if used[i]:
                continue
            m = min(cur_min, sym[last][r])
            if m <= best_value:
                continue
            used[i] = True
            path.append(r)
            done = dfs(m)
            path.pop()
            used[i] = False
            if done:
                return True
        return False

    dfs(float("inf"))
    if not best_order:  # every order has an unusable link
        best_order, best_value = list(members), 0.0
    return Scored(tuple(best_order), best_value, None)


def best_ring_heuristic(members: Sequence[int], sym: Matrix) -> Scored:
    """A good ring order for large sets: greedy nearest neighbour, then bottleneck 2-opt."""
    order = [members[0]]
    left = list(members[1:])
    while left:
        nxt = max(left, key=lambda c: (sym[order[-1]][c], -c))
        order.append(nxt)
        left.remove(nxt)
    k = len(order)
    for _ in range(TWO_OPT_ROUNDS * k):
        i = min(range(k), key=lambda j: sym[order[j]][order[(j + 1) % k]])
        weakest = sym[order[i]][order[(i + 1) % k]]
        improved = False
        for j in range(k):
            if j in (i, (i + 1) % k, (i - 1) % k):
                continue
            a, b = order[i], order[(i + 1) % k]
            c, d = order[j], order[(j + 1) % k]
            if min(sym[a][c], sym[b][d]) > weakest:
                order = _reverse_segment(order, i, j)
                improved = True
                break
        if not improved:
            break
    value = min(sym[order[j]][order[(j + 1) % k]] for j in range(k))
    order = _canonical(order)
    return Scored(tuple(order), value, weakest_edge(order, sym))


def _canonical(order: list[int]) -> list[int]:
    """The same ring, started at its smallest member and turned so order[1] < order[-1]."""
    i = order.index(min(order))
    order = order[i:] + order[:i]
    return order if order[1] < order[-1] else [order[0], *order[:0:-1]]


def _reverse_segment(order: list[int], i: int, j: int) -> list[int]:
    """2-opt move: edges (i, i+1) and (j, j+1) become (i, j) and (i+1, j+1)."""
    k = len(order)
    rotated = order[i + 1 :] + order[: i + 1]  # now old i is last, old i+1 is first
    jj = (j - i - 1) % k
    return rotated[: jj + 1][::-1] + rotated[jj + 1 :]


def weakest_edge(order: Sequence[int], sym: Matrix) -> tuple[int, int] | None:
    """The slowest link of a ring (the first one, if several tie)."""
    k = len(order)
    if k < 2:
        return None
    j = min(range(k), key=lambda x: sym[order[x]][order[(x + 1) % k]])
    return (order[j], order[(j + 1) % k])


# --------------------------------------------------------------------------- all-to-all


DIRECT, SHARED_SWITCH, SHARED_PCIE = 0, 1, 2  # port codes for all_to_all_value


def all_to_all_value(members: Sequence[int], w: Matrix, port: list[list[int]]) -> Scored:
    """Per-GPU all-to-all rate: min((k-1) x slowest pair, slowest GPU egress or ingress).

    port[a][b]: how a's traffic to b leaves a. DIRECT links add up; every SHARED_SWITCH peer
    shares the same switch links and every SHARED_PCIE peer the one PCIe link, so each of
    those contributes its fastest peer once.
    """
    k = len(members)
    slowest, weakest = float("inf"), None
    ports = float("inf")
    for g in members:
        out_direct = in_direct = out_switch = in_switch = out_pcie = in_pcie = 0.0
        row, codes = w[g], port[g]
        for p in members:
            if p == g:
                continue
            v, back, code = row[p], w[p][g], codes[p]
            if v < slowest:
                slowest, weakest = v, (g, p)
            if code == DIRECT:
                out_direct += v
                in_direct += back
            elif code == SHARED_SWITCH:
                out_switch = v if v > out_switch else out_switch
                in_switch = back if back > in_switch else in_switch
            else:
                out_pcie = v if v > out_pcie else out_pcie
                in_pcie = back if back > in_pcie else in_pcie
        ports = min(ports, out_direct + out_switch + out_pcie, in_direct + in_switch + in_pcie)
    return Scored(tuple(members), min((k - 1) * slowest, ports), weakest)


# --------------------------------------------------------------------------- set search


def is_exact(n: int, k: int, ring: bool) -> bool:
    """Whether trying every set (and every ring order) stays within EXACT_WORK_LIMIT."""
    if ring:
        orders = factorial(k - 1) // 2 if k > 2 else 1
        return k <= EXACT_RING_K and comb(n, k) * orders * k <= EXACT_WORK_LIMIT
    return comb(n, k) * k * k <= EXACT_WORK_LIMIT


def all_sets(n: int, k: int, score: Callable[[tuple[int, ...]], Scored]) -> list[Scored]:
    """Every k-subset of range(n), scored."""
    return [score(members) for members in combinations(range(n), k)]


def grown_sets(
    n: int, k: int, affinity: Callable[[list[int], int], float],
    score: Callable[[tuple[int, ...]], Scored],
    prefer: Callable[[list[int], int], tuple[int, ...]], tol: float,
) -> list[Scored]:
    """Greedy: from each seed GPU add the candidate with the best affinity to the set so far.

    Candidates within `tol` of the best affinity are ties, settled by `prefer(members,
    candidate)` (smaller first), so measurement noise does not scatter the set. One set per
    seed, duplicates dropped, so every GPU has at least one scored set that contains it.
    """
    seen: dict[tuple[int, ...], Scored] = {}
    for seed in range(n):
        members = [seed]
        while len(members) < k:
            scores = {c: affinity(members, c) for c in range(n) if c not in members}
            floor = max(scores.values()) * (1 - tol)
            pool = [c for c, v in scores.items() if v >= floor]
            members.append(min(pool, key=lambda c: prefer(members, c)))
        key = tuple(sorted(members))
        if key not in seen:
            seen[key] = score(key)
    return list(seen.values())
