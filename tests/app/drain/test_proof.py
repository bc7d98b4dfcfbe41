"""Proof before a return, and the breaker that fails closed when peerwatch's state is lost:
the engine on plain values (docs/drain.md "Proof before a return", "The breaker")."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from peerwatch.app.drain.engine import Fleet, decide
from peerwatch.app.drain.facts import Breaker, Do, Mark, SchedNode
from peerwatch.app.drain.gpu_count import k8s_capacity_gpus, slurm_gres_gpus
from peerwatch.app.drain.slurm import parse_node
from tests.app.drain.test_engine import ACT, NOW, ago, gpu_down, healthy, one

OURS = SchedNode("n1", out=True, ours=True, reason="peerwatch: GPU5 down")
TAKEN = Mark("n1", ago(3600), "GPU5 down")
CLEAR = replace(TAKEN, clear_since=ago(1000))  # healthy past return_after (900 s)


def test_a_gpu_the_pci_bus_names_but_nvml_does_not_list_keeps_the_node_out() -> None:
    short = replace(healthy("n1"), gpu_counts={"nvml": 7, "inventory": 7, "pci": 8})
    d = one(ACT, short, OURS, TAKEN)
    assert d.do is Do.KEEP
    assert d.reason == "still out: not proven whole: 7 of 8 GPUs present (the PCI bus names 8)"
    assert one(ACT, short, OURS, CLEAR).do is Do.RELAPSED  # the healthy wait starts over
    assert one(ACT, healthy("n1"), OURS, CLEAR).do is Do.RETURN


def test_the_schedulers_gpu_count_is_evidence_too() -> None:
    seven = replace(healthy("n1"), gpu_counts={"nvml": 7, "inventory": 7})
    d = one(ACT, seven, replace(OURS, gpus=8), CLEAR)
    assert d.do is Do.RELAPSED and d.reason == ("GPU count: the scheduler gives 8, NVML "
                                                "lists 7")
    d = one(ACT, seven, SchedNode("n1", gpus=8))  # in service: a fault that takes it out
    assert d.do is Do.TAKE_OUT and d.reason.startswith("GPU count: the scheduler gives 8")
    d = one(replace(ACT, gpu_missing=False), seven, replace(OURS, gpus=8), TAKEN)
    assert d.do is Do.KEEP and "7 of 8 GPUs present (the scheduler names 8)" in d.reason
    assert one(ACT, seven, SchedNode("n1", gpus=7)).do is Do.KEEP


def test_an_adopted_node_needs_evidence_beyond_what_nvml_lists_now() -> None:
    adopted = replace(CLEAR, adopted=True)
    bare = replace(healthy("n1"), gpu_counts={"nvml": 7, "inventory": 7})
    d = one(ACT, bare, OURS, replace(adopted, clear_since=None))
    assert d.do is Do.KEEP and "adopted without a record" in d.reason
    assert one(ACT, bare, replace(OURS, gpus=7), adopted).do is Do.RETURN
    assert one(ACT, replace(bare, gpu_counts={"nvml": 7, "pci": 7}), OURS,
               adopted).do is Do.RETURN
    assert one(ACT, bare, OURS, CLEAR).do is Do.RETURN  # the server's own take-out: it knew


def test_a_silent_or_unjudged_host_proves_nothing() -> None:
    stale = replace(healthy("n1"), stale=True, reason="no report for 5m")
    assert "no recent reports" in one(ACT, stale, OURS, TAKEN).reason
    unjudged = replace(healthy("n1"), verdict=None, since=None)
    assert one(ACT, unjudged, OURS, CLEAR).do is Do.RELAPSED


def test_a_return_waits_for_a_full_sweep_judged_after_the_take_out() -> None:
    old_sweep = replace(healthy("n1"), full_sweep_at=ago(4000))
    d = one(ACT, old_sweep, OURS, CLEAR)
    assert d.do is Do.HOLD and "waits for a full sweep judged after" in d.reason
    assert one(ACT, replace(old_sweep, full_sweep_at=None), OURS, CLEAR).do is Do.HOLD
    assert one(ACT, healthy("n1"), OURS, CLEAR).do is Do.RETURN


def kinds(fleet: Fleet) -> list[tuple[str, Do]]:
    return [(d.node, d.do) for d in decide(ACT, NOW, fleet) if d.do is not Do.KEEP]


def test_a_server_that_lost_peerwatchs_state_fails_closed() -> None:
    nodes = (replace(OURS, name="n0"), SchedNode("n1"), SchedNode("n2"))
    facts = {"n0": healthy("n0"), "n1": gpu_down("n1"), "n2": healthy("n2")}
    lost = Fleet(nodes, facts, {}, Breaker(known=False))
    decisions = decide(ACT, NOW, lost)
    assert [(d.node, d.do) for d in decisions if d.do is not Do.KEEP] == [
        ("", Do.TRIP_BREAKER), ("n0", Do.ADOPT), ("n1", Do.HOLD)]
    assert decisions[0].details == {"cause": "state_lost", "nodes": ["n0"]}
    assert "no record of peerwatch's drains" in decisions[0].reason
    # adopted, proven healthy and past its wait: still not returned until a person resets
    adopted = Mark("n0", ago(3600), "x", clear_since=ago(1000), adopted=True)
    closed = Breaker(open=True, opened_at=ago(3600), reason="lost", cause="state_lost")
    held = Fleet(nodes, facts, {"n0": adopted}, closed)
    assert kinds(held) == [("n0", Do.HOLD), ("n1", Do.HOLD)]
    reset = kinds(replace(held, breaker=Breaker()))  # a person reset it: back to the rules
    assert reset[0] == ("n0", Do.RETURN) and ("n1", Do.HOLD) in reset  # n0 still uses a slot


def test_a_drain_made_a_moment_ago_is_not_a_lost_state() -> None:
    """Overlapping rounds on a fresh server: one drained the node and has not recorded it
    yet when the next reads the state. A drain younger than the grace is not evidence that
    the server lost anything; one older, or of a time the scheduler does not say, is."""
    def lost(since: object) -> list[tuple[str, Do]]:
        node = replace(OURS, out_since=since)
        return kinds(Fleet((node,), {"n1": gpu_down("n1")}, {}, Breaker(known=False)))

    assert ("", Do.TRIP_BREAKER) not in lost(ago(10))
    assert lost(ago(600))[0] == ("", Do.TRIP_BREAKER)
    assert lost(None)[0] == ("", Do.TRIP_BREAKER)


def test_slurm_says_when_a_reason_was_set() -> None:
    line = ("NodeName=n1 State=IDLE+DRAIN Reason=peerwatch: GPU5 down "
            "[root@2026-12-06T05:03:10]")
    node = parse_node(line)
    assert node is not None and node.ours and node.reason == "peerwatch: GPU5 down"
    assert node.out_since == datetime.fromisoformat("2026-12-06T05:03:10").astimezone(UTC)
    assert parse_node("NodeName=n1 State=IDLE+DRAIN Reason=x [root@garbled]").out_since is None


def test_a_fresh_scheduler_with_nothing_of_peerwatchs_out_starts_normally() -> None:
    fresh = Fleet((SchedNode("n1"),), {"n1": gpu_down("n1")}, {}, Breaker(known=False))
    assert kinds(fresh) == [("n1", Do.TAKE_OUT)]


def test_the_schedulers_gpu_counts_are_read() -> None:
    assert slurm_gres_gpus("NodeName=a Gres=gpu:8 State=IDLE") == 8
    assert slurm_gres_gpus("NodeName=a Gres=gpu:h100:4(S:0),gpu:a100:2(S:1) State=IDLE") == 6
    assert slurm_gres_gpus("NodeName=a Gres=(null) State=IDLE") is None
    assert slurm_gres_gpus("NodeName=a Gres=nic:2 State=IDLE") is None
    node = parse_node("NodeName=gpu-a Arch=x86_64 CoresPerSocket=1 Gres=gpu:8(S:0-1) "
                      "State=DRAINED Reason=peerwatch: GPU5 down [root@2026-12-01T03:12:00]")
    assert node is not None and node.gpus == 8 and node.ours
    assert k8s_capacity_gpus({"status": {"capacity": {"nvidia.com/gpu": "8"}}}) == 8
    assert k8s_capacity_gpus({"status": {"capacity": {"cpu": "64"}}}) is None
