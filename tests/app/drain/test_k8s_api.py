"""The Kubernetes backend, through the official client over real HTTP, against the fake API
server of k8s_api.py (resourceVersion conflicts, patch semantics, managedFields, schema
checks, every request recorded) and a real `peerwatch serve`: what it writes, what it never
overwrites, and that one controller acts."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from kubernetes import client as kube

from peerwatch.app.drain.client import DrainClient
from peerwatch.app.drain.controller import Leader, run_round
from peerwatch.app.drain.k8s import (
    ANNOTATION,
    CONDITION,
    FIELD_MANAGER,
    LABEL_GPUS,
    TAINT_KEY,
    KubernetesBackend,
)
from peerwatch.app.drain.k8s_lease import NAME
from peerwatch.app.drain.policy import load_policy
from tests.app.drain.k8s_api import FakeKubeApi, node, serve
from tests.deploy.test_slurm_drain import ACT, ADMIN, CUT, drain_server, report

ROOMY = "breaker: {max_share_out: 1.0}\n"  # an operator's cordon counts towards the share
OTHER = {"key": "example.com/other", "value": "x", "effect": "NoSchedule"}


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    with drain_server(tmp_path) as url:
        yield url


@pytest.fixture
def api() -> FakeKubeApi:
    return FakeKubeApi()


@pytest.fixture
def url(api: FakeKubeApi) -> Iterator[str]:
    with serve(api) as base:
        yield base


def backend(url: str, taint: bool = False) -> KubernetesBackend:
    return KubernetesBackend(kube.ApiClient(kube.Configuration(host=url)), taint)


def run(policy: str, b: KubernetesBackend, server: str, **kw):
    return run_round(load_policy(policy), b, DrainClient(server, ADMIN), "test",
                     say=lambda _: None, **kw)


def kinds(server: str) -> list[str]:
    return [a["kind"] for a in httpx.get(f"{server}/api/v1/actions",
                                         params={"scheduler": "kubernetes"}).json()["actions"]]


def person(api: FakeKubeApi, name: str, patch: dict, manager: str = "kubectl-cordon") -> None:
    api.patch_node(name, patch, "strategic", manager)


def test_the_engine_takes_out_and_returns_through_the_api(
        api: FakeKubeApi, url: str, server: str) -> None:
    for n in (node("k-bad"), node("k-ops", unschedulable=True), node("k-ok")):
        api.add(n)
    report(server, "k-bad", CUT)
    report(server, "k-ops", CUT)
    report(server, "k-ok")
    b = backend(url, taint=True)
    run(ACT + "kubernetes: {taint: true}\n" + ROOMY, b, server)
    bad = api.node("k-bad")
    assert bad["spec"]["unschedulable"] is True
    assert [t["key"] for t in bad["spec"]["taints"]] == [TAINT_KEY]
    [cond] = [c for c in bad["status"]["conditions"] if c["type"] == CONDITION]
    assert cond["status"] == "False" and cond["message"].startswith("GPU5 down:")
    assert "; do: reset the GPU" in cond["message"]
    assert json.loads(bad["metadata"]["annotations"][ANNOTATION])["cordoned"] is True
    assert bad["metadata"]["labels"][LABEL_GPUS] == "7"
    assert api.node("k-ok")["metadata"]["labels"][LABEL_GPUS] == "8"
    assert ANNOTATION not in api.node("k-ops")["metadata"].get("annotations", {})
    # every node write was conditional on the resourceVersion read, under peerwatch's name
    for r in api.written("nodes"):
        assert r.query["fieldManager"] == [FIELD_MANAGER], r
        if "spec" in r.body:
            assert r.body["metadata"]["resourceVersion"], r

    report(server, "k-bad")
    run(ACT + "kubernetes: {taint: true}\n" + ROOMY, b, server)  # healthy: the wait starts
    run(ACT + "kubernetes: {taint: true}\n" + ROOMY, b, server)
    bad = api.node("k-bad")
    assert bad["spec"] == {"unschedulable": False, "taints": []}
    assert ANNOTATION not in bad["metadata"]["annotations"]
    assert api.node("k-ops")["spec"]["unschedulable"] is True  # the operator's cordon stays
    assert kinds(server) == ["return", "recovering", "take_out"]


def test_a_taint_added_between_the_read_and_the_patch_survives(
        api: FakeKubeApi, url: str, server: str) -> None:
    api.add(node("k-bad", taints=[OTHER]))
    report(server, "k-bad", CUT)
    other_controller = {"spec": {"taints": [OTHER, {"key": "example.com/late",
                                                    "effect": "NoExecute"}]}}
    api.before_write.append(lambda a: person(a, "k-bad", other_controller, "other-controller"))
    run(ACT + "kubernetes: {taint: true}\n" + ROOMY, backend(url, taint=True), server)
    keys = [t["key"] for t in api.node("k-bad")["spec"]["taints"]]
    assert keys == ["example.com/other", "example.com/late", TAINT_KEY]
    statuses = [r.status for r in api.written("nodes") if "spec" in (r.body or {})]
    assert statuses == [409, 200]  # refused on the stale resourceVersion, then decided again


def test_taints_are_never_written_without_the_taint_option_and_labels_only_on_change(
        api: FakeKubeApi, url: str, server: str) -> None:
    api.add(node("k-bad", taints=[OTHER]))
    api.add(node("k-ok"))
    report(server, "k-bad", CUT)
    report(server, "k-ok")
    b = backend(url)
    run(ACT + ROOMY, b, server)
    report(server, "k-bad")
    run(ACT + ROOMY, b, server)
    run(ACT + ROOMY, b, server)
    assert kinds(server) == ["return", "recovering", "take_out"]
    assert all("taints" not in (r.body.get("spec") or {}) for r in api.written("nodes"))
    assert api.node("k-bad")["spec"]["taints"] == [OTHER]
    label_writes = [r for r in api.written("nodes") if "labels" in r.body.get("metadata", {})]
    # k-bad: 7 healthy GPUs, then 8; k-ok: 8 once; later rounds change nothing
    assert sorted(r.path.rsplit("/", 1)[1] for r in label_writes) == ["k-bad", "k-bad", "k-ok"]


def test_a_cordon_made_during_the_round_makes_peerwatch_back_off(
        api: FakeKubeApi, url: str, server: str) -> None:
    api.add(node("k-bad"))
    report(server, "k-bad", CUT)
    cordon = {"spec": {"unschedulable": True}}
    api.before_write.append(lambda a: person(a, "k-bad", cordon))
    b = backend(url)
    # the round lists the node schedulable; the person's cordon lands before peerwatch's patch
    r = run(ACT, b, server)
    assert [what.split(":")[0] for _d, what in r.done] == ["backed off"]
    n = api.node("k-bad")
    assert n["spec"]["unschedulable"] is True and ANNOTATION not in n["metadata"].get(
        "annotations", {})
    [took] = httpx.get(f"{server}/api/v1/actions").json()["actions"]
    assert took["kind"] == "backed_off" and "cordoned by kubectl-cordon" in took["details"]["why"]
    run(ACT, b, server)  # later rounds: someone else's, left alone
    assert kinds(server) == ["backed_off"]


def test_a_persons_cordon_over_peerwatchs_survives_its_return(
        api: FakeKubeApi, url: str, server: str) -> None:
    api.add(node("k-bad"))
    report(server, "k-bad", CUT)
    b = backend(url)
    run(ACT, b, server)
    assert api.node("k-bad")["spec"]["unschedulable"] is True
    # a person takes the node over: uncordon, then cordon for their own maintenance
    person(api, "k-bad", {"spec": {"unschedulable": False}}, "kubectl-cordon")
    person(api, "k-bad", {"spec": {"unschedulable": True}}, "kubectl-cordon")
    report(server, "k-bad")  # healthy
    run(ACT, b, server)
    run(ACT, b, server)
    n = api.node("k-bad")
    assert n["spec"]["unschedulable"] is True  # the person's cordon stands
    assert ANNOTATION not in n["metadata"].get("annotations", {})  # peerwatch's mark is gone
    assert kinds(server) == ["forget", "take_out"]


def test_one_controller_acts_and_the_other_takes_over_after_the_ttl(
        api: FakeKubeApi, url: str, server: str) -> None:
    api.add(node("k-bad"))
    report(server, "k-bad", CUT)
    first, second = backend(url), backend(url)
    lead_a = Leader(first.lease("peerwatch"), "head-a:1", 3600.0)
    lead_b = Leader(second.lease("peerwatch"), "head-b:2", 3600.0)
    assert run(ACT, second, server, leader=lead_b).observing is None  # first come: acts
    seen = run(ACT, first, server, leader=lead_a)
    assert seen.observing and "held by head-b:2" in seen.observing and seen.done == []
    lease = api.lease("peerwatch", NAME)
    assert lease["spec"]["holderIdentity"] == "head-b:2"
    # head-b stops renewing; once its lease lapsed, head-a takes it over
    api.patch_lease("peerwatch", NAME, {"spec": {
        "renewTime": "2026-01-01T00:00:00.000000Z"}}, "merge")
    assert run(ACT, first, server, leader=lead_a).observing is None
    taken = api.lease("peerwatch", NAME)["spec"]
    assert (taken["holderIdentity"], taken["leaseTransitions"]) == ("head-a:1", 2)
    lead_a.lease.release("head-a:1")
    assert api.lease("peerwatch", NAME)["spec"].get("holderIdentity") is None
    assert kinds(server) == ["take_out"]  # one take-out, by the one that acted
