"""The search under placement agrees with brute force, and its greedy fallbacks stay sane."""

from __future__ import annotations

import random
from itertools import combinations, permutations

import pytest

from peerwatch.app.analysis import placement_search as search


def _random_sym(n: int, seed: int, levels: int = 6) -> list[list[float]]:
    rng = random.Random(seed)
    w = [[0.0] * n for _ in range(n)]
    for a, b in combinations(range(n), 2):
        w[a][b] = w[b][a] = float(rng.randint(0, levels)) * 50e9
    return w


def _brute_ring(members: tuple[int, ...], w: list[list[float]]) -> float:
    k = len(members)
    return max(
        min(w[o[i]][o[(i + 1) % k]] for i in range(k))
        for o in ((members[0], *rest) for rest in permutations(members[1:]))
    )


def _ring_value(order: tuple[int, ...], w: list[list[float]]) -> float:
    k = len(order)
    return min(w[order[i]][order[(i + 1) % k]] for i in range(k))


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("k", [2, 3, 4, 5, 6, 7, 8])
def test_exact_ring_matches_brute_force(seed: int, k: int) -> None:
    w = _random_sym(8, seed)
    members = tuple(sorted(random.Random(seed).sample(range(8), k)))
    got = search.best_ring_exact(members, w)
    assert got.value == _brute_ring(members, w)
    assert sorted(got.members) == list(members)
    assert _ring_value(got.members, w) == got.value  # the order it names really reaches it


def test_ring_table_covers_every_ring_once() -> None:
    # (k-1)!/2 distinct rings of k nodes
    assert [len(search._ring_table(k)) for k in (3, 4, 5, 6)] == [1, 3, 12, 60]


def test_exact_ring_finds_the_only_good_order() -> None:
    # NVLink ring 0-1-3-2 at 100, diagonals 0-3 and 1-2 at 10
    w = [[0.0] * 4 for _ in range(4)]
    for a, b, v in [(0, 1, 100), (1, 3, 100), (3, 2, 100), (2, 0, 100), (0, 3, 10), (1, 2, 10)]:
        w[a][b] = w[b][a] = float(v)
    for ring in (search.best_ring_exact, search.best_ring_heuristic):
        got = ring((0, 1, 2, 3), w)
        assert got.members == (0, 1, 3, 2) and got.value == 100.0


@pytest.mark.parametrize("seed", range(4))
def test_heuristic_ring_is_a_valid_canonical_ring(seed: int) -> None:
    w = _random_sym(12, seed, levels=3)
    members = tuple(range(12))
    got = search.best_ring_heuristic(members, w)
    assert sorted(got.members) == list(members)
    assert got.members[0] == 0 and got.members[1] < got.members[-1]
    assert got.value == _ring_value(got.members, w)
    triangle = search.best_ring_heuristic(members[:3], w)
    assert triangle.value == _brute_ring(members[:3], w)


def test_upper_bound_is_never_below_the_best_ring() -> None:
    for seed in range(10):
        w = _random_sym(6, seed)
        members = tuple(range(6))
        assert search.ring_upper_bound(members, w) >= _brute_ring(members, w)


def test_all_to_all_direct_links_add_up_and_pairs_limit() -> None:
    w = [[0.0, 10.0, 10.0], [10.0, 0.0, 4.0], [10.0, 10.0, 0.0]]
    direct = [[search.DIRECT] * 3 for _ in range(3)]
    got = search.all_to_all_value((0, 1, 2), w, direct)
    assert got.value == 2 * 4.0 and got.weakest == (1, 2)


def test_all_to_all_shared_ports_count_their_fastest_peer_once() -> None:
    w = [[0.0, 10.0, 10.0], [10.0, 0.0, 10.0], [10.0, 10.0, 0.0]]
    switch = [[search.SHARED_SWITCH] * 3 for _ in range(3)]
    assert search.all_to_all_value((0, 1, 2), w, switch).value == 10.0  # not 2 x 10
    # GPU0 reaches 1 over its own NVLinks and 2 over PCIe: both ports work at once
    mixed = [[search.DIRECT] * 3 for _ in range(3)]
    mixed[0][2] = mixed[2][0] = search.SHARED_PCIE
    w[0][2] = w[2][0] = 3.0
    assert search.all_to_all_value((0, 1, 2), w, mixed).value == 2 * 3.0


def test_exactness_budget() -> None:
    assert search.is_exact(8, 4, ring=True)
    assert search.is_exact(8, 8, ring=True)
    assert search.is_exact(16, 4, ring=True)
    assert not search.is_exact(16, 8, ring=True)
    assert not search.is_exact(16, 10, ring=False)


def test_grown_sets_keep_noise_from_scattering_the_set() -> None:
    # all pairs equal within 1%: ties go to the preferred (lower) candidates
    n = 6
    rng = random.Random(1)
    w = [[0.0 if a == b else 100.0 * (1 + rng.random() / 100) for b in range(n)] for a in range(n)]

    def affinity(members: list[int], c: int) -> float:
        return min(w[c][m] for m in members)

    sets = search.grown_sets(
        n, 3, affinity, lambda m: search.Scored(m, 1.0, None), lambda ms, c: (c,), tol=0.05
    )
    assert sets[0].members == (0, 1, 2)
    assert all(len(s.members) == 3 for s in sets)
