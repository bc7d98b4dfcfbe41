"""The Kubernetes backend without an API server (none can run here; see README): every body
it sends, applied to a Node, validates against the Kubernetes API schema (kubernetes-validate,
strict) and the client's models; and the same engine as the Slurm test, through a real
`peerwatch serve`, cordons a faulty node with peerwatch's condition, annotation and taint,
leaves an operator's cordon alone, labels nodes, and puts a recovered node back."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import kubernetes_validate
import pytest
from kubernetes.client import ApiClient

from peerwatch.app.drain.client import DrainClient
from peerwatch.app.drain.controller import run_round
from peerwatch.app.drain.facts import GpuFact, NodeFacts
from peerwatch.app.drain.k8s import (
    ANNOTATION,
    CONDITION,
    LABEL_CLIQUE,
    LABEL_GPUS,
    TAINT_KEY,
    KubernetesBackend,
    labels_patch,
    put_back_patch,
    reason_code,
    status_patch,
    take_out_patch,
)
from peerwatch.app.drain.policy import load_policy
from tests.app.drain.k8s_fake import FakeCoreV1Api, _merge, node
from tests.deploy.test_slurm_drain import ACT, ADMIN, CUT, drain_server, report

K8S = "1.33.0"
NOW = datetime(2026, 12, 1, 3, 12, tzinfo=UTC)
SCHEMA = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema"


def validate(obj: dict) -> None:
    kubernetes_validate.validate(obj, K8S, strict=True)  # raises ValidationError


def patched(base: dict, *patches: dict) -> dict:
    out = copy.deepcopy(base)
    for p in patches:
        _merge(out, p)
    return out


def test_every_body_applied_to_a_node_matches_the_api_schema() -> None:
    facts = NodeFacts("nvl-1", "degraded", "x", NOW, gpus_total=4,
                      gpus=tuple(GpuFact(g, "healthy" if g else "down", "r", NOW)
                                 for g in range(4)),
                      nvlink_domain="fcbd9a15b3a158088f90d289fd020702", nvlink_clique=1)
    other = {"key": "dedicated", "value": "ml", "effect": "NoSchedule"}
    out = patched(node("nvl-1", taints=[other]),
                  take_out_patch("GPU0 down: all 18 NVLinks down: reseat the GPU", NOW,
                                 [other], taint=True),
                  status_patch(False, "GPU0 down: all 18 NVLinks down", NOW),
                  labels_patch(facts))
    validate(out)
    model = ApiClient()._ApiClient__deserialize(out, "V1Node")
    [mine] = [c for c in model.status.conditions if c.type == CONDITION]
    assert (mine.status, mine.reason) == ("False", "Gpu0Down")
    assert [t.key for t in model.spec.taints] == ["dedicated", TAINT_KEY]
    assert model.spec.unschedulable and ANNOTATION in model.metadata.annotations
    assert model.metadata.labels[LABEL_GPUS] == "3"
    assert model.metadata.labels[LABEL_CLIQUE] == "fcbd9a15b3a158088f90d289fd020702.1"
    back = patched(out, put_back_patch(out["spec"]["taints"], uncordon=True),
                   status_patch(True, "healthy", NOW))
    validate(back)
    assert back["spec"] == {"unschedulable": False, "taints": [other]}
    assert ANNOTATION not in back["metadata"]["annotations"]


def test_the_schema_still_rejects_a_bad_body_and_patches_as_the_fake_does() -> None:
    bad = patched(node("n"), {"spec": {"taints": [{"key": TAINT_KEY, "effect": "NoSchedul",
                                                    "valu": "x"}]}})
    with pytest.raises(kubernetes_validate.ValidationError):
        validate(bad)
    strict = SCHEMA / f"v{K8S}-local-strict"
    taints = json.loads((strict / "nodespec-v1.json").read_text())["properties"]["taints"]
    conditions = json.loads((strict / "nodestatus-v1.json").read_text())["properties"]
    assert taints["x-kubernetes-list-type"] == "atomic"  # replaced whole: the others kept in it
    assert conditions["conditions"]["x-kubernetes-patch-merge-key"] == "type"


def test_condition_reasons_are_camel_case_words() -> None:
    assert reason_code("GPU5 down: all 18 NVLinks down") == "Gpu5Down"
    assert reason_code("NVSwitchFabricNotReady: GPU2 fabric not ready") == \
        "Nvswitchfabricnotready"
    assert reason_code("2 of 8 GPUs not healthy (GPU1, GPU2): x") == "FabricFault"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    with drain_server(tmp_path) as url:
        yield url


def test_the_engine_through_the_kubernetes_backend(server: str) -> None:
    api = FakeCoreV1Api([node("k-bad"), node("k-ops", unschedulable=True), node("k-ok")])
    backend = KubernetesBackend(api, taint=True,
                                to_dict=ApiClient().sanitize_for_serialization)
    client = DrainClient(server, ADMIN)
    policy = load_policy(ACT + "kubernetes: {taint: true}\n"
                         "breaker: {max_share_out: 1.0}\n")  # the operator's cordon counts
    report(server, "k-bad", CUT)
    report(server, "k-ops", CUT)
    report(server, "k-ok")
    run_round(policy, backend, client, "test", say=lambda _: None)
    bad = api.nodes["k-bad"]
    assert bad["spec"]["unschedulable"] is True
    assert [t["key"] for t in bad["spec"]["taints"]] == [TAINT_KEY]
    [cond] = [c for c in bad["status"]["conditions"] if c["type"] == CONDITION]
    assert cond["status"] == "False" and cond["message"].startswith("GPU5 down:")
    assert bad["metadata"]["labels"][LABEL_GPUS] == "7"
    assert api.nodes["k-ok"]["metadata"]["labels"][LABEL_GPUS] == "8"
    ops = api.nodes["k-ops"]
    assert ANNOTATION not in ops["metadata"].get("annotations", {}) and not ops["spec"]["taints"]
    for doc in api.nodes.values():
        validate(doc)

    report(server, "k-bad")
    run_round(policy, backend, client, "test", say=lambda _: None)  # healthy: the wait starts
    run_round(policy, backend, client, "test", say=lambda _: None)
    bad = api.nodes["k-bad"]
    assert bad["spec"] == {"unschedulable": False, "taints": []}
    [cond] = [c for c in bad["status"]["conditions"] if c["type"] == CONDITION]
    assert cond["status"] == "True" and ANNOTATION not in bad["metadata"]["annotations"]
    assert api.nodes["k-ops"]["spec"]["unschedulable"] is True  # the operator's cordon stays
    kinds = [a["kind"] for a in httpx.get(f"{server}/api/v1/actions",
                                          params={"scheduler": "kubernetes"}).json()["actions"]]
    assert kinds == ["return", "recovering", "take_out"]
    validate(bad)
