"""Triangulation on the simulated leaf/spine network: each fault of probes/sim/simnet.py is
named where it is, and every slow pair gets one cause."""

from __future__ import annotations

from itertools import combinations

from peerwatch.app.analysis.network import Floors, PairFigures, Place, judge_pairs, pair_key
from peerwatch.app.analysis.triangulate import triangulate
from peerwatch.probes.sim.simnet import (
    BadCable,
    CongestedSpine,
    LeafSlow,
    NetFault,
    PairPathSlow,
    SimNetwork,
    leaf_spine,
)


def places(net: SimNetwork) -> dict[str, Place]:
    return {h.name: Place(h.leaf, h.spine, h.domain, h.line_rate_bps) for h in net.hosts.values()}


def judge(net: SimNetwork, *faults: NetFault, history: int = 4):
    """Every pair measured `history` times healthy, then once with the faults."""
    figs = []
    for a, b in combinations(sorted(net.hosts), 2):
        old = [net.measure(a, b, salt=i) for i in range(history)]
        net.faults = list(faults)
        new = net.measure(a, b, salt=99)
        net.faults = []
        figs.append(PairFigures(pair_key(a, b), "net_write", (new, *old)))
    return triangulate(judge_pairs(figs, places(net), Floors()), places(net))


def kinds(j) -> set[tuple[str, str]]:
    return {(f.kind, f.subject) for f in j.faults}


def test_healthy_network_has_no_fault() -> None:
    j = judge(leaf_spine(3, 3))
    assert not j.faults and all(v.verdict == "healthy" for v in j.pairs)


def test_a_bad_cable_is_its_host() -> None:
    j = judge(leaf_spine(3, 3), BadCable("node-5"))
    assert kinds(j) == {("host", "node-5")}
    slow = [v for v in j.pairs if v.slow]
    assert len(slow) == 8 and {v.cause for v in slow} == {"host:node-5"}


def test_a_congested_spine_is_the_spine() -> None:
    net = leaf_spine(4, 2, spines=2)
    j = judge(net, CongestedSpine("spine1"))
    assert kinds(j) == {("spine", "spine1")}
    assert all(v.cause == "spine:spine1" for v in j.pairs if v.slow)


def test_a_bad_leaf_is_the_leaf_not_its_hosts() -> None:
    j = judge(leaf_spine(3, 3), LeafSlow("leaf1"))
    assert kinds(j) == {("leaf", "leaf1")}


def test_a_pair_slow_only_together_is_their_path() -> None:
    j = judge(leaf_spine(2, 3), PairPathSlow("node-1", "node-4"))
    assert kinds(j) == {("path", "node-1~node-4")} and j.faults[0].resolved
    assert not j.suspects


def test_one_partner_only_leaves_both_suspect() -> None:
    net = leaf_spine(1, 2)
    j = judge(net, BadCable("node-1"))
    assert kinds(j) == {("path", "node-1~node-2")} and not j.faults[0].resolved
    assert j.suspects == ["node-1", "node-2"]
