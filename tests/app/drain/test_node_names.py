"""Node names from the scheduler follow the rule every host name follows before any reaches
scontrol's arguments or a Kubernetes API path: a round leaves a node named off the rule
alone and says so, and neither backend runs anything for such a name (an action asked for
one is reported as failed).

Neither Slurm nor Kubernetes lets a node be named `a/b`, so the names come from a scripted
`scontrol` (as a compromised or broken one would answer) and the Kubernetes fake
(tests/app/drain/k8s_api.py, a fake API over HTTP); the server is a real `peerwatch serve`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client as kube

from peerwatch.app.drain.client import DrainClient
from peerwatch.app.drain.controller import run_round
from peerwatch.app.drain.facts import NodeFacts, SchedNode
from peerwatch.app.drain.k8s import KubernetesBackend
from peerwatch.app.drain.names import BadNodeName, checked, keep_valid
from peerwatch.app.drain.policy import load_policy
from peerwatch.app.drain.slurm import SlurmBackend
from peerwatch.probes.report import HOSTNAME_RULE
from tests.app.drain.k8s_api import FakeKubeApi, node, serve
from tests.deploy.test_slurm_drain import ACT, ADMIN, CUT, drain_server, report

HOSTILE = ["a/b", "-rf", "a;reboot", "$(reboot)", "a..b", "x" * 254, "node-1\nstate=resume",
           "node-1 state=resume", ""]
SCONTROL = """#!/bin/sh
echo "$@" >> "$SCONTROL_LOG"
if [ "$1" = show ]; then
  for n in node-ok 'a/b' '-rf' '$(reboot)'; do echo "NodeName=$n State=IDLE Reason=none"; done
fi
"""


@pytest.mark.parametrize("bad", HOSTILE)
def test_a_name_off_the_rule_is_refused_naming_it(bad: str) -> None:
    with pytest.raises(BadNodeName, match="breaks the rule") as refused:
        checked(bad)
    assert HOSTNAME_RULE in str(refused.value) and "not acted on" in str(refused.value)


def test_a_name_on_the_rule_keeps_the_schedulers_spelling() -> None:
    assert checked("GPU-Node_07.rack-3") == "GPU-Node_07.rack-3"
    kept, refused = keep_valid([SchedNode("Node-A"), SchedNode("a/b"), SchedNode("-x")])
    assert [n.name for n in kept] == ["Node-A"] and sorted(refused) == ["-x", "a/b"]


def test_slurm_runs_no_update_for_a_name_off_the_rule(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "scontrol"
    fake.write_text(SCONTROL)
    fake.chmod(0o755)
    log = tmp_path / "calls.log"
    monkeypatch.setenv("SCONTROL_LOG", str(log))
    backend = SlurmBackend(str(fake))
    kept, refused = keep_valid(backend.nodes())
    assert [n.name for n in kept] == ["node-ok"] and sorted(refused) == ["$(reboot)", "-rf", "a/b"]
    for bad in HOSTILE:
        with pytest.raises(BadNodeName):
            backend.take_out(bad, "GPU5 down")
        with pytest.raises(BadNodeName):
            backend.put_back(bad)
    assert [line for line in log.read_text().splitlines() if line.startswith("update")] == []


def test_kubernetes_reads_and_patches_no_name_off_the_rule() -> None:
    api = FakeKubeApi()
    api.add(node("k-ok"))
    facts = NodeFacts(host="a/b", verdict="down", reason="x", since=None)
    with serve(api) as url:
        backend = KubernetesBackend(kube.ApiClient(kube.Configuration(host=url)), taint=True)
        acts = (lambda name: backend.take_out(name, "GPU5 down"), backend.put_back,
                backend.forget, lambda name: backend.publish(name, facts))
        for bad in HOSTILE:
            for act in acts:
                with pytest.raises(BadNodeName):
                    act(bad)
    assert api.requests == []  # not even a read


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    with drain_server(tmp_path) as url:
        yield url


def test_a_round_leaves_a_node_named_off_the_rule_alone_and_says_so(server: str) -> None:
    api = FakeKubeApi()
    for name in ("k-bad", "a/b", "k-ok"):
        api.add(node(name))
    report(server, "k-bad", CUT)
    report(server, "k-ok")
    said: list[str] = []
    client = DrainClient(server, ADMIN)
    try:
        with serve(api) as url:
            backend = KubernetesBackend(kube.ApiClient(kube.Configuration(host=url)))
            run_round(load_policy(ACT + "breaker: {max_share_out: 1.0}\n"), backend, client,
                      "test", say=said.append)
    finally:
        client.close()
    assert f"node host name 'a/b' breaks the rule: {HOSTNAME_RULE}; not acted on" in said
    assert api.nodes["k-bad"]["spec"]["unschedulable"] is True  # the round still ran
    written = {r.path.split("/")[4] for r in api.requests if r.method == "PATCH"}
    assert written == {"k-bad", "k-ok"}


def test_a_kept_node_keeps_everything_the_scheduler_said() -> None:
    """The name check passes the node through whole: its GPU count and drain time are what
    proof and the breaker decide from."""
    node = SchedNode("Gpu-1", out=True, ours=True, reason="peerwatch: x", gpus=8)
    [kept], _ = keep_valid([node])
    assert kept == node
