"""A hand-written stand-in for the parts of `kubernetes.client.CoreV1Api` the drain backend
uses (no API server can run on these machines). Nodes are kept as the API's JSON and
patched the way the API server patches a Node: maps merged (null deletes a key),
`status.conditions` merged by `type`, `spec.taints` replaced whole (the schema says so, and
test_k8s checks that it still does). Answers are the client's own V1Node models."""

from __future__ import annotations

import copy
from typing import Any

from kubernetes.client import ApiClient, V1Node, V1NodeList

MERGED_BY = {("status", "conditions"): "type"}


def _merge(into: dict[str, Any], patch: dict[str, Any], path: tuple[str, ...] = ()) -> None:
    for key, value in patch.items():
        where = (*path, key)
        if value is None:
            into.pop(key, None)
        elif where in MERGED_BY and isinstance(value, list):
            merge_key = MERGED_BY[where]
            items = {i[merge_key]: i for i in into.get(key, [])}
            items.update({i[merge_key]: i for i in value})
            into[key] = list(items.values())
        elif isinstance(value, dict):
            _merge(into.setdefault(key, {}), value, where)
        else:
            into[key] = copy.deepcopy(value)


def model(kind: str, data: dict[str, Any]) -> Any:
    api = ApiClient()
    return api._ApiClient__deserialize(data, kind)  # the client's own JSON -> model path


class FakeCoreV1Api:
    def __init__(self, nodes: list[dict[str, Any]]) -> None:
        self.nodes = {n["metadata"]["name"]: copy.deepcopy(n) for n in nodes}
        self.patches: list[tuple[str, str, dict[str, Any]]] = []

    def list_node(self) -> V1NodeList:
        return model("V1NodeList", {"apiVersion": "v1", "kind": "NodeList", "metadata": {},
                                    "items": list(self.nodes.values())})

    def read_node(self, name: str) -> V1Node:
        return model("V1Node", self.nodes[name])

    def patch_node(self, name: str, body: dict[str, Any]) -> V1Node:
        self.patches.append(("node", name, body))
        _merge(self.nodes[name], body)
        return self.read_node(name)

    def patch_node_status(self, name: str, body: dict[str, Any]) -> V1Node:
        self.patches.append(("status", name, body))
        _merge(self.nodes[name], body)
        return self.read_node(name)


def node(name: str, *, unschedulable: bool = False, taints: list | None = None
         ) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "spec": {"unschedulable": unschedulable, "taints": taints or []},
            "status": {"conditions": [{"type": "Ready", "status": "True", "reason":
                                       "KubeletReady", "message": "kubelet is ready",
                                       "lastHeartbeatTime": "2026-12-01T00:00:00Z",
                                       "lastTransitionTime": "2026-12-01T00:00:00Z"}]}}
