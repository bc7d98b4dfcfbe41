"""The pair planner: suspects first, NVL72 trays, leaf rings, spine coverage; each host in
one pair at most; recent pairs not planned again; unhealthy or busy hosts left out."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from peerwatch.app.analysis.network import Place, pair_key
from peerwatch.app.analysis.pair_planner import PlanInputs, plan

NOW = datetime(2026, 12, 6, 10, tzinfo=UTC)


def places(leaves: int, per_leaf: int, domain: int = 0) -> dict[str, Place]:
    out, n = {}, 0
    for leaf in range(leaves):
        for _ in range(per_leaf):
            n += 1
            dom = f"nvl{(n - 1) // domain}" if domain else None
            out[f"h{n:02d}"] = Place(f"leaf{leaf}", "spine0", dom, 50e9)
    return out


def inputs(p: dict[str, Place], **kw) -> PlanInputs:
    base = {"eligible": set(p), "busy": set(), "last_tested": {}, "suspects": [], "now": NOW}
    return PlanInputs(p, **(base | kw))


def test_each_host_is_in_one_pair_and_leaves_are_covered_first() -> None:
    planned, left = plan(inputs(places(2, 4)))
    hosts = [h for p in planned for h in (p.host, p.peer_host)]
    assert len(hosts) == len(set(hosts)) == 8 and not left
    assert all(p.reason.startswith("leaf") for p in planned)


def test_a_suspect_is_planned_first_with_a_partner_it_has_not_had() -> None:
    p = places(2, 3)
    tested = {pair_key("h01", "h02"): NOW - timedelta(minutes=5)}
    planned, _ = plan(inputs(p, suspects=["h02"], last_tested=tested))
    assert planned[0].host == "h02" and planned[0].peer_host == "h03"
    assert planned[0].reason.startswith("suspect h02")


def test_recent_pairs_wait_and_the_rest_rotate() -> None:
    p = places(1, 4)
    ring = [("h01", "h02"), ("h02", "h03"), ("h03", "h04"), ("h04", "h01")]
    tested = {pair_key(*ring[0]): NOW - timedelta(hours=1),
              pair_key(*ring[2]): NOW - timedelta(hours=1)}
    planned, _ = plan(inputs(p, last_tested=tested))
    assert {(x.host, x.peer_host) for x in planned} == {("h02", "h03"), ("h04", "h01")}


def test_nvl72_trays_come_before_the_leaf_ring() -> None:
    planned, _ = plan(inputs(places(1, 4, domain=2)))
    assert {(x.host, x.peer_host, x.reason) for x in planned} == {
        ("h01", "h02", "NVL72 domain nvl0 trays"), ("h03", "h04", "NVL72 domain nvl1 trays")}


def test_spine_coverage_joins_leaves_once_the_rings_are_done() -> None:
    p = places(2, 2)
    tested = {pair_key("h01", "h02"): NOW, pair_key("h03", "h04"): NOW}
    planned, _ = plan(inputs(p, last_tested=tested))
    assert [x.reason for x in planned] == ["spine coverage leaf0 <-> leaf1"]


def test_unhealthy_and_busy_hosts_are_left_out_with_why() -> None:
    p = places(1, 4)
    planned, left = plan(inputs(p, eligible=set(p) - {"h01"}, busy={"h02"}))
    assert left == {"h01": "not healthy or not fresh", "h02": "in a pair job already"}
    assert {(x.host, x.peer_host) for x in planned} == {("h03", "h04")}
