"""Kubernetes backend: a node condition, a cordon, an opt-in NoSchedule taint and labels,
through the official `kubernetes` client (the `drain-k8s` extra). NOT run against a live
cluster yet: the request bodies are checked against the Kubernetes API schema in the tests.

Taking a node out: condition `PeerwatchFabricReady=False` (reason and message with the
action: the NVSentinel / EKS `AcceleratedHardwareReady` convention), `spec.unschedulable`
(cordon), the `peerwatch.io/taken-out` annotation that says it is peerwatch's, and with
`kubernetes: {taint: true}` the `peerwatch.io/fabric-unhealthy:NoSchedule` taint. Putting it
back removes all of them and sets the condition True. A node cordoned without peerwatch's
annotation is someone else's and never touched. Labels on every node peerwatch knows:
`peerwatch.io/healthy-gpus`, and on rack-scale systems `peerwatch.io/gpu.clique`
(`<domain>.<clique>`, the value format of GFD's `nvidia.com/gpu.clique`) and
`peerwatch.io/nvlink-domain` (Topograph's accelerator domain), which peerwatch does not
overwrite in the NVIDIA or Topograph namespaces.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any, Protocol

from peerwatch.app.drain.facts import NodeFacts, SchedNode
from peerwatch.app.drain.gpu_count import k8s_capacity_gpus
from peerwatch.app.drain.policy import one_line

CONDITION = "PeerwatchFabricReady"
ANNOTATION = "peerwatch.io/taken-out"
TAINT_KEY = "peerwatch.io/fabric-unhealthy"
LABEL_GPUS = "peerwatch.io/healthy-gpus"
LABEL_CLIQUE = "peerwatch.io/gpu.clique"
LABEL_DOMAIN = "peerwatch.io/nvlink-domain"
MESSAGE_MAX = 1024


class KubernetesError(RuntimeError):
    """The API server refused or could not be reached; the message holds its words."""


def _iso(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def reason_code(reason: str) -> str:
    """A condition's `reason`: CamelCase from the fault's leading words (GPU5 down -> Gpu5Down)."""
    head = reason.split(":", 1)[0]
    words = re.findall(r"[A-Za-z0-9]+", head)[:4]
    code = "".join(w[:1].upper() + w[1:].lower() for w in words)
    return code if code[:1].isalpha() else "FabricFault"


def condition(ready: bool, reason: str, now: datetime) -> dict[str, Any]:
    return {"type": CONDITION, "status": "True" if ready else "False",
            "reason": "FabricHealthy" if ready else reason_code(reason),
            "message": one_line(reason, MESSAGE_MAX), "lastHeartbeatTime": _iso(now),
            "lastTransitionTime": _iso(now)}


def status_patch(ready: bool, reason: str, now: datetime) -> dict[str, Any]:
    """Strategic merge patch of `nodes/status`: conditions merge by `type`."""
    return {"status": {"conditions": [condition(ready, reason, now)]}}


def _without_ours(taints: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    return [t for t in taints or [] if t.get("key") != TAINT_KEY]


def take_out_patch(reason: str, now: datetime, taints: list[dict[str, Any]] | None,
                   taint: bool) -> dict[str, Any]:
    """Cordon, mark as peerwatch's, and (opt-in) taint; `taints`: the node's current ones
    (a node's taint list is replaced whole by a patch, so the others are kept in it)."""
    spec: dict[str, Any] = {"unschedulable": True}
    if taint:
        spec["taints"] = [*_without_ours(taints), {"key": TAINT_KEY, "value": "true",
                                                   "effect": "NoSchedule",
                                                   "timeAdded": _iso(now)}]
    note = json.dumps({"at": _iso(now), "reason": one_line(reason, MESSAGE_MAX)})
    return {"metadata": {"annotations": {ANNOTATION: note}}, "spec": spec}


def put_back_patch(taints: list[dict[str, Any]] | None, uncordon: bool) -> dict[str, Any]:
    spec: dict[str, Any] = {"taints": _without_ours(taints)}
    if uncordon:
        spec["unschedulable"] = False
    return {"metadata": {"annotations": {ANNOTATION: None}}, "spec": spec}


def labels_patch(facts: NodeFacts) -> dict[str, Any]:
    labels: dict[str, str | None] = {LABEL_GPUS: str(facts.healthy_gpus),
                                     LABEL_CLIQUE: None, LABEL_DOMAIN: None}
    if facts.nvlink_domain:
        labels[LABEL_DOMAIN] = facts.nvlink_domain
        if facts.nvlink_clique is not None:
            labels[LABEL_CLIQUE] = f"{facts.nvlink_domain}.{facts.nvlink_clique}"
    return {"metadata": {"labels": labels}}


def sched_node(node: dict[str, Any]) -> SchedNode:
    """A Node (as the API's JSON) as the engine sees it."""
    meta, spec = node.get("metadata") or {}, node.get("spec") or {}
    ours_note = (meta.get("annotations") or {}).get(ANNOTATION)
    tainted = any(t.get("key") == TAINT_KEY for t in spec.get("taints") or [])
    out = bool(spec.get("unschedulable")) or tainted
    reason = ""
    if ours_note:
        try:
            reason = str(json.loads(ours_note).get("reason", ""))
        except (ValueError, AttributeError):
            reason = str(ours_note)
    elif out:
        reason = "cordoned"
    return SchedNode(name=meta["name"], out=out, ours=out and bool(ours_note), reason=reason,
                     gpus=k8s_capacity_gpus(node))


class NodeApi(Protocol):
    """What the backend uses of `kubernetes.client.CoreV1Api`."""

    def list_node(self) -> Any: ...
    def read_node(self, name: str) -> Any: ...
    def patch_node(self, name: str, body: dict[str, Any]) -> Any: ...
    def patch_node_status(self, name: str, body: dict[str, Any]) -> Any: ...


class KubernetesBackend:
    name = "kubernetes"

    def __init__(self, api: NodeApi, taint: bool = False, to_dict: Any = None) -> None:
        self.api = api
        self.taint = taint
        self._to_dict = to_dict or (lambda obj: obj)

    @classmethod
    def connect(cls, kubeconfig: str | None, taint: bool) -> KubernetesBackend:
        from kubernetes import client, config  # optional: the drain-k8s extra

        try:
            if kubeconfig:
                config.load_kube_config(kubeconfig)
            else:
                try:
                    config.load_incluster_config()
                except config.ConfigException:
                    config.load_kube_config()
        except (config.ConfigException, OSError) as exc:
            raise KubernetesError(f"no Kubernetes configuration: {exc}") from exc
        api = client.CoreV1Api()
        return cls(api, taint, api.api_client.sanitize_for_serialization)

    def _call(self, what: str, fn: Any, *args: Any) -> Any:
        try:
            return self._to_dict(fn(*args))
        except Exception as exc:  # ApiException, urllib3 errors: one line, the node named
            raise KubernetesError(f"{what}: {one_line(str(exc), 300)}") from exc

    def _node(self, name: str) -> dict[str, Any]:
        node: dict[str, Any] = self._call(f"read node {name}", self.api.read_node, name)
        return node

    def nodes(self) -> list[SchedNode]:
        listed = self._call("list nodes", self.api.list_node)
        return [sched_node(n) for n in listed.get("items") or []]

    def take_out(self, name: str, reason: str) -> None:
        now = datetime.now(UTC)
        taints = (self._node(name).get("spec") or {}).get("taints")
        self._call(f"patch node {name}", self.api.patch_node, name,
                   take_out_patch(reason, now, taints, self.taint))
        self._call(f"patch node {name} status", self.api.patch_node_status, name,
                   status_patch(False, reason, now))

    def _remove_ours(self, name: str, uncordon: bool) -> None:
        taints = (self._node(name).get("spec") or {}).get("taints")
        self._call(f"patch node {name}", self.api.patch_node, name,
                   put_back_patch(taints, uncordon))
        self._call(f"patch node {name} status", self.api.patch_node_status, name,
                   status_patch(True, "peerwatch: fabric healthy", datetime.now(UTC)))

    def put_back(self, name: str) -> None:
        """Uncordon, if the cordon is still peerwatch's; a node someone already put back only
        loses peerwatch's annotation and taint."""
        raw = self._node(name)
        node = sched_node(raw)
        if node.out and not node.ours:
            raise KubernetesError(f"{name} is no longer out by peerwatch: not put back")
        ours = (raw.get("metadata") or {}).get("annotations", {}).get(ANNOTATION) is not None
        self._remove_ours(name, uncordon=node.out and ours)

    def forget(self, name: str) -> None:
        """Someone else owns the node now, or it is gone: remove only peerwatch's marks."""
        try:
            node = self._node(name)
        except KubernetesError:
            return  # deleted: nothing of peerwatch's is left on it
        if (node.get("metadata") or {}).get("annotations", {}).get(ANNOTATION) is not None:
            self._remove_ours(name, uncordon=False)

    def publish(self, name: str, facts: NodeFacts) -> None:
        self._call(f"label node {name}", self.api.patch_node, name, labels_patch(facts))
