"""The decision engine on plain values: debounce, settle, maintenance, ownership, return, and
the breaker's absolute and relative limits."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from peerwatch.app.drain.engine import Fleet, decide, decide_node
from peerwatch.app.drain.facts import AlertFact, Breaker, Do, GpuFact, Mark, NodeFacts, SchedNode
from peerwatch.app.drain.policy import BreakerLimits, Policy

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
ACT = Policy(mode="act", debounce_s=300, settle_after_boot_s=600, return_after_s=900)


def ago(seconds: float) -> datetime:
    return NOW - timedelta(seconds=seconds)


WHOLE = {"nvml": 8, "inventory": 8, "pci": 8, "seen_since_boot": 8}


def healthy(host: str) -> NodeFacts:
    """Proven whole: every GPU the PCI bus and the boot's set name present, a full sweep
    judged half an hour ago."""
    return NodeFacts(host, "healthy", "all pairs within 0.9 of expected", ago(86_400),
                     gpus_total=8, gpus=tuple(GpuFact(g, "healthy", "ok", ago(86_400))
                                              for g in range(8)),
                     gpu_counts=dict(WHOLE), full_sweep_at=ago(1800))


def gpu_down(host: str, for_s: float = 600) -> NodeFacts:
    gpus = list(healthy(host).gpus)
    gpus[5] = GpuFact(5, "down", "18/18 NVLinks down: reseat or replace the GPU", ago(for_s))
    return replace(healthy(host), verdict="degraded", gpus=tuple(gpus))


def one(policy: Policy, facts: NodeFacts | None, node: SchedNode | None = None,
        mark: Mark | None = None):
    return decide_node(policy, NOW, node or SchedNode("n1"), mark, facts)


def test_a_gpu_down_long_enough_takes_the_node_out_with_the_verdicts_action() -> None:
    d = one(ACT, gpu_down("n1"))
    assert d.do is Do.TAKE_OUT
    assert d.reason == "GPU5 down: 18/18 NVLinks down: reseat or replace the GPU"


def test_a_fault_younger_than_the_debounce_is_held() -> None:
    d = one(ACT, gpu_down("n1", for_s=60))
    assert d.do is Do.HOLD and "must hold 300 s" in d.reason


def test_a_host_settling_after_its_driver_started_is_held() -> None:
    d = one(ACT, replace(gpu_down("n1"), started_at=ago(120)))
    assert d.do is Do.HOLD and "settling" in d.reason


def test_inside_a_maintenance_window_nothing_is_touched() -> None:
    facts = replace(gpu_down("n1"), maintenance_until=NOW + timedelta(hours=1))
    assert one(ACT, facts).do is Do.HOLD
    mark = Mark("n1", ago(3600), "x", clear_since=ago(7200))
    assert one(ACT, replace(healthy("n1"), maintenance_until=NOW + timedelta(hours=1)),
               SchedNode("n1", out=True, ours=True), mark).do is Do.HOLD


def test_degraded_gpus_count_only_from_the_threshold() -> None:
    gpus = list(healthy("n1").gpus)
    gpus[1] = GpuFact(1, "degraded", "0.5 of expected", ago(3600))
    facts = replace(healthy("n1"), verdict="degraded", gpus=tuple(gpus))
    assert one(ACT, facts).do is Do.KEEP
    gpus[2] = GpuFact(2, "degraded", "0.4 of expected", ago(100))
    facts = replace(facts, gpus=tuple(gpus))
    assert one(ACT, facts).do is Do.HOLD  # the second GPU reached the threshold 100 s ago
    gpus[2] = GpuFact(2, "degraded", "0.4 of expected", ago(400))
    d = one(ACT, replace(facts, gpus=tuple(gpus)))
    assert d.do is Do.TAKE_OUT and d.reason.startswith("2 of 8 GPUs not healthy (GPU1, GPU2)")
    assert one(replace(ACT, degraded_min_lost_gpus=None),
               replace(facts, gpus=tuple(gpus))).do is Do.KEEP


def test_alert_conditions_take_a_node_out_and_others_do_not() -> None:
    alert = AlertFact("NVSwitchFabricNotReady", "GPU2 fabric not ready", ago(900), gpu=2)
    assert one(ACT, replace(healthy("n1"), alerts=(alert,))).do is Do.TAKE_OUT
    assert one(replace(ACT, fabric_not_ready=False),
               replace(healthy("n1"), alerts=(alert,))).do is Do.KEEP
    other = AlertFact("PCIeLinkDowntrained", "x4 of x16", ago(900))
    assert one(ACT, replace(healthy("n1"), alerts=(other,))).do is Do.KEEP
    assert one(replace(ACT, alerts=("PCIeLinkDowntrained",)),
               replace(healthy("n1"), alerts=(other,))).do is Do.TAKE_OUT


def test_a_node_out_by_someone_else_is_never_touched() -> None:
    node = SchedNode("n1", out=True, ours=False, reason="bad DIMM, ticket 42")
    assert one(ACT, gpu_down("n1"), node).do is Do.KEEP
    assert one(ACT, healthy("n1"), node, Mark("n1", ago(60), "x")).do is Do.FORGET


def test_a_node_unknown_to_peerwatch_is_left_alone() -> None:
    assert one(ACT, None).do is Do.KEEP


def test_return_waits_for_return_after_and_a_relapse_starts_over() -> None:
    ours = SchedNode("n1", out=True, ours=True, reason="peerwatch: GPU5 down")
    mark = Mark("n1", ago(3600), "GPU5 down")
    assert one(ACT, gpu_down("n1"), ours, mark).do is Do.KEEP
    assert one(ACT, healthy("n1"), ours, mark).do is Do.RECOVERING
    waiting = replace(mark, clear_since=ago(600))
    assert one(ACT, healthy("n1"), ours, waiting).do is Do.HOLD
    assert one(ACT, gpu_down("n1", 10), ours, waiting).do is Do.RELAPSED
    assert one(ACT, healthy("n1"), ours, replace(mark, clear_since=ago(900))).do is Do.RETURN


def test_ownership_without_a_mark_is_adopted_and_a_mark_without_it_is_dropped() -> None:
    ours = SchedNode("n1", out=True, ours=True, reason="peerwatch: GPU5 down")
    assert one(ACT, gpu_down("n1"), ours).do is Do.ADOPT
    assert one(ACT, gpu_down("n1"), SchedNode("n1"), Mark("n1", ago(60), "x")).do is Do.FORGET


def test_observe_mode_keeps_virtual_marks_that_act_mode_drops() -> None:
    observe = replace(ACT, mode="observe")
    virtual = Mark("n1", ago(3600), "GPU5 down", applied=False)
    assert one(observe, gpu_down("n1"), SchedNode("n1"), virtual).do is Do.KEEP
    assert one(observe, healthy("n1"), SchedNode("n1"), virtual).do is Do.RECOVERING
    assert one(ACT, gpu_down("n1"), SchedNode("n1"), virtual).do is Do.FORGET


CLOSED = Breaker()


def fleet(n: int, bad: int, breaker: Breaker = CLOSED, out: int = 0) -> Fleet:
    names = [f"n{i:02d}" for i in range(n)]
    nodes = tuple(SchedNode(name, out=i >= n - out, reason="ticket" if i >= n - out else "")
                  for i, name in enumerate(names))
    facts = {name: gpu_down(name) if i < bad else healthy(name) for i, name in enumerate(names)}
    return Fleet(nodes=nodes, facts=facts, marks={}, breaker=breaker)


def kinds(decisions) -> list[tuple[str, Do]]:
    return [(d.node, d.do) for d in decisions if d.do is not Do.KEEP]


def test_the_breaker_trips_at_its_per_window_limit() -> None:
    policy = replace(ACT, breaker=BreakerLimits(600, max_per_window=2, max_share_out=1.0))
    got = kinds(decide(policy, NOW, fleet(10, bad=3)))
    assert got == [("n00", Do.TAKE_OUT), ("n01", Do.TAKE_OUT), ("", Do.TRIP_BREAKER),
                   ("n02", Do.HOLD)]
    got = kinds(decide(policy, NOW, fleet(10, bad=3, breaker=Breaker(taken_out_in_window=1))))
    assert got[:2] == [("n00", Do.TAKE_OUT), ("", Do.TRIP_BREAKER)]


def test_the_breaker_trips_at_its_share_of_the_gpu_nodes_counting_only_its_own() -> None:
    policy = replace(ACT, breaker=BreakerLimits(600, max_per_window=100, max_share_out=0.3))
    f = fleet(10, bad=4, out=2)  # two nodes a person drained: they use no slot
    assert kinds(decide(policy, NOW, f))[:3] == [
        ("n00", Do.TAKE_OUT), ("n01", Do.TAKE_OUT), ("n02", Do.TAKE_OUT)]
    ours = replace(f.nodes[9], ours=True, reason="peerwatch: GPU5 down")
    f = replace(f, nodes=(*f.nodes[:9], ours), marks={"n09": Mark("n09", ago(60), "x")},
                facts={**f.facts, "n09": gpu_down("n09")})
    got = kinds(decide(policy, NOW, f))  # one of peerwatch's own is out: two slots left
    assert got == [("n00", Do.TAKE_OUT), ("n01", Do.TAKE_OUT), ("", Do.TRIP_BREAKER),
                   ("n02", Do.HOLD), ("n03", Do.HOLD)]
    assert "30% of 10 GPU nodes out at once (1 out by peerwatch already)" in [
        d.reason for d in decide(policy, NOW, f) if d.do is Do.TRIP_BREAKER][0]


def test_the_breakers_share_counts_gpu_nodes_peerwatch_hears_from_not_cpu_nodes() -> None:
    policy = replace(ACT, breaker=BreakerLimits(600, max_per_window=100, max_share_out=0.2))
    f = fleet(10, bad=3)
    cpu = tuple(SchedNode(f"cpu{i:02d}") for i in range(40))  # never report to the server
    got = kinds(decide(policy, NOW, replace(f, nodes=(*f.nodes, *cpu))))
    assert got == [("n00", Do.TAKE_OUT), ("n01", Do.TAKE_OUT), ("", Do.TRIP_BREAKER),
                   ("n02", Do.HOLD)]  # 20 % of the 10 GPU nodes, not of all 50 nodes


def test_an_open_breaker_holds_take_outs_but_not_returns() -> None:
    f = fleet(4, bad=1, breaker=Breaker(open=True, opened_at=ago(60), reason="limit"))
    mark = Mark("n03", ago(7200), "GPU5 down", clear_since=ago(1000))
    nodes = (*f.nodes[:3], SchedNode("n03", out=True, ours=True, reason="peerwatch: x"))
    got = kinds(decide(ACT, NOW, replace(f, nodes=nodes, marks={"n03": mark})))
    assert got == [("n03", Do.RETURN), ("n00", Do.HOLD)]


def test_marks_of_nodes_the_scheduler_no_longer_has_are_dropped() -> None:
    f = replace(fleet(2, bad=0), marks={"gone": Mark("gone", ago(60), "x")})
    assert kinds(decide(ACT, NOW, f)) == [("gone", Do.FORGET)]


def test_a_nodes_own_round_does_not_spend_the_breakers_room_on_others() -> None:
    policy = replace(ACT, breaker=BreakerLimits(600, max_per_window=1, max_share_out=1.0))
    got = kinds(decide(policy, NOW, fleet(3, bad=2), only="n01"))
    assert got == [("n00", Do.HOLD), ("n01", Do.TAKE_OUT)]
