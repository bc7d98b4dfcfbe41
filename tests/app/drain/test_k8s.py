"""The Kubernetes backend without a real API server (none can run here; docs/drain.md): every
body it sends, applied to a Node, validates against the Kubernetes API schema
(kubernetes-validate, strict) and the client's models. The backend itself runs the official
client over HTTP against tests/app/drain/k8s_api.py, a fake API server that enforces
resourceVersion conflicts and patch semantics and records every request: the engine, through a
real `peerwatch serve`, cordons a faulty node with peerwatch's condition, annotation and taint,
leaves an operator's cordon alone, labels nodes, and puts a recovered node back; a taint
another controller adds between the read and the patch survives; a cordon a person makes
during a round, or re-makes on a node peerwatch cordoned, survives; one controller acts."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from pathlib import Path

import kubernetes_validate
import pytest
from kubernetes.client import ApiClient

from peerwatch.app.drain.facts import GpuFact, NodeFacts
from peerwatch.app.drain.k8s import (
    ANNOTATION,
    CONDITION,
    LABEL_CLIQUE,
    LABEL_GPUS,
    TAINT_KEY,
    labels_patch,
    put_back_patch,
    reason_code,
    status_patch,
    take_out_patch,
)
from tests.app.drain.k8s_api import merge, node

K8S = "1.33.0"
NOW = datetime(2026, 12, 1, 3, 12, tzinfo=UTC)
SCHEMA = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema"


def validate(obj: dict) -> None:
    kubernetes_validate.validate(obj, K8S, strict=True)  # raises ValidationError


def patched(base: dict, *patches: dict) -> dict:
    out = copy.deepcopy(base)
    for p in patches:
        merge(out, p, strategic=True)
    return out


def test_every_body_applied_to_a_node_matches_the_api_schema() -> None:
    facts = NodeFacts("nvl-1", "degraded", "x", NOW, gpus_total=4,
                      gpus=tuple(GpuFact(g, "healthy" if g else "down", "r", NOW)
                                 for g in range(4)),
                      nvlink_domain="fcbd9a15b3a158088f90d289fd020702", nvlink_clique=1)
    other = {"key": "dedicated", "value": "ml", "effect": "NoSchedule"}
    before = node("nvl-1", taints=[other])
    before["metadata"]["resourceVersion"] = "7"
    out = patched(before,
                  take_out_patch("GPU0 down: all 18 NVLinks down; do: reseat the GPU", NOW,
                                 before, taint=True),
                  status_patch(False, "GPU0 down: all 18 NVLinks down", NOW),
                  labels_patch(facts) or {})
    validate(out)
    model = ApiClient()._ApiClient__deserialize(out, "V1Node")
    [mine] = [c for c in model.status.conditions if c.type == CONDITION]
    assert (mine.status, mine.reason) == ("False", "Gpu0Down")
    assert [t.key for t in model.spec.taints] == ["dedicated", TAINT_KEY]
    assert model.spec.unschedulable and ANNOTATION in model.metadata.annotations
    assert model.metadata.labels[LABEL_GPUS] == "3"
    assert model.metadata.labels[LABEL_CLIQUE] == "fcbd9a15b3a158088f90d289fd020702.1"
    assert json.loads(out["metadata"]["annotations"][ANNOTATION])["cordoned"] is True
    back = patched(out, put_back_patch(out, uncordon=True), status_patch(True, "healthy", NOW))
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


