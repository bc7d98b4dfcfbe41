"""Kubernetes backend: a node condition, a cordon, an opt-in NoSchedule taint and labels,
through the official `kubernetes` client (the `drain-k8s` extra). NOT run against a live
cluster: its tests drive the real client over HTTP against a fake API server
(tests/app/drain/k8s_api.py) that enforces resourceVersion conflicts and patch semantics.

Taking a node out: condition `PeerwatchFabricReady=False` (reason and message with the
action: the NVSentinel / EKS `AcceleratedHardwareReady` convention), `spec.unschedulable`
(cordon), the `peerwatch.io/taken-out` annotation that says it is peerwatch's, and with
`kubernetes: {taint: true}` the `peerwatch.io/fabric-unhealthy:NoSchedule` taint.

Safe against people and other controllers (compare-and-set):
- every write of the Node carries the `metadata.resourceVersion` it was decided from: a
  change in between (a cordon, another controller's taint) is a 409 Conflict, and the node
  is read again and decided again (`RETRIES` times);
- the taint list is atomic in the API (replaced whole by any patch), so peerwatch writes it
  only to add or remove its own taint, from the list it just read, under that
  resourceVersion; with `taint: false` it never writes it (a taint of its own left from
  when it was on is still removed on return);
- a cordon is peerwatch's only if the node was schedulable when peerwatch cordoned it (the
  annotation says `"cordoned": true`) and the API's field manager of `spec.unschedulable` is
  still peerwatch's (someone who uncordoned and cordoned it again owns it: it stays);
- labels are patched only where they change.

Labels on every node peerwatch knows: `peerwatch.io/healthy-gpus`, and on rack-scale
systems `peerwatch.io/gpu.clique` (`<domain>.<clique>`, the value format of GFD's
`nvidia.com/gpu.clique`) and `peerwatch.io/nvlink-domain` (Topograph's accelerator domain),
never the NVIDIA or Topograph names. One controller acts: `KubeLease` (k8s_lease.py).
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

from peerwatch.app.drain.facts import BackedOff, NodeFacts, SchedNode
from peerwatch.app.drain.gpu_count import k8s_capacity_gpus
from peerwatch.app.drain.k8s_call import Api, Conflict, KubernetesError, NotFound
from peerwatch.app.drain.k8s_lease import KubeLease
from peerwatch.app.drain.names import checked
from peerwatch.app.drain.policy import one_line

__all__ = ["Conflict", "KubernetesBackend", "KubernetesError", "NotFound"]

CONDITION = "PeerwatchFabricReady"
ANNOTATION = "peerwatch.io/taken-out"
TAINT_KEY = "peerwatch.io/fabric-unhealthy"
LABEL_GPUS = "peerwatch.io/healthy-gpus"
LABEL_CLIQUE = "peerwatch.io/gpu.clique"
LABEL_DOMAIN = "peerwatch.io/nvlink-domain"
FIELD_MANAGER = "peerwatch-drain"
MESSAGE_MAX = 1024
RETRIES = 5


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
    """Strategic merge patch of `nodes/status`: conditions merge by `type`, so it needs no
    resourceVersion (the kubelet's own conditions are never in it)."""
    return {"status": {"conditions": [condition(ready, reason, now)]}}


def _meta(node: dict[str, Any]) -> dict[str, Any]:
    return node.get("metadata") or {}


def _spec(node: dict[str, Any]) -> dict[str, Any]:
    return node.get("spec") or {}


def note_of(node: dict[str, Any]) -> dict[str, Any] | None:
    """peerwatch's annotation, parsed (None: not there)."""
    raw = (_meta(node).get("annotations") or {}).get(ANNOTATION)
    if raw is None:
        return None
    try:
        note = json.loads(raw)
    except ValueError:
        return {"reason": str(raw)}
    return note if isinstance(note, dict) else {"reason": str(raw)}


def tainted(node: dict[str, Any]) -> bool:
    return any(t.get("key") == TAINT_KEY for t in _spec(node).get("taints") or [])


def cordon_manager(node: dict[str, Any]) -> str | None:
    """Who last set `spec.unschedulable`, from the API's managedFields (None: not told)."""
    for entry in _meta(node).get("managedFields") or []:
        fields = ((entry.get("fieldsV1") or {}).get("f:spec") or {})
        if "f:unschedulable" in fields:
            return str(entry.get("manager"))
    return None


def cordon_is_ours(node: dict[str, Any]) -> bool:
    note = note_of(node)
    if not _spec(node).get("unschedulable") or not note or note.get("cordoned") is not True:
        return False
    return cordon_manager(node) in (None, FIELD_MANAGER)


def _with_rv(node: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """The patch, made conditional on the node being as read (409 otherwise)."""
    meta = {**patch.get("metadata", {}), "resourceVersion": _meta(node).get("resourceVersion")}
    return {**patch, "metadata": meta}


def take_out_patch(reason: str, now: datetime, node: dict[str, Any],
                   taint: bool) -> dict[str, Any]:
    """Cordon a schedulable node, say so in the annotation, and (opt-in) add the taint to the
    list as read: conditional on the node's resourceVersion."""
    spec: dict[str, Any] = {"unschedulable": True}
    if taint and not tainted(node):
        spec["taints"] = [*(_spec(node).get("taints") or []),
                          {"key": TAINT_KEY, "value": "true", "effect": "NoSchedule",
                           "timeAdded": _iso(now)}]
    note = json.dumps({"at": _iso(now), "reason": one_line(reason, MESSAGE_MAX),
                       "cordoned": not _spec(node).get("unschedulable")})
    return _with_rv(node, {"metadata": {"annotations": {ANNOTATION: note}}, "spec": spec})


def put_back_patch(node: dict[str, Any], uncordon: bool) -> dict[str, Any]:
    """Remove peerwatch's annotation, its taint if there, and (if its own) the cordon."""
    spec: dict[str, Any] = {}
    if tainted(node):
        spec["taints"] = [t for t in _spec(node).get("taints") or [] if t.get("key") != TAINT_KEY]
    if uncordon:
        spec["unschedulable"] = False
    patch: dict[str, Any] = {"metadata": {"annotations": {ANNOTATION: None}}}
    if spec:
        patch["spec"] = spec
    return _with_rv(node, patch)


def wanted_labels(facts: NodeFacts) -> dict[str, str | None]:
    labels: dict[str, str | None] = {LABEL_GPUS: str(facts.healthy_gpus),
                                     LABEL_CLIQUE: None, LABEL_DOMAIN: None}
    if facts.nvlink_domain:
        labels[LABEL_DOMAIN] = facts.nvlink_domain
        if facts.nvlink_clique is not None:
            labels[LABEL_CLIQUE] = f"{facts.nvlink_domain}.{facts.nvlink_clique}"
    return labels


def labels_patch(facts: NodeFacts, current: dict[str, str] | None = None
                 ) -> dict[str, Any] | None:
    """Only the labels that change (None: nothing to write)."""
    now = current or {}
    changed = {k: v for k, v in wanted_labels(facts).items() if now.get(k) != v}
    return {"metadata": {"labels": changed}} if changed else None


def sched_node(node: dict[str, Any]) -> SchedNode:
    """A Node (as the API's JSON) as the engine sees it: out when cordoned or carrying
    peerwatch's taint; peerwatch's when its annotation is there and the cordon (if any) is
    its own."""
    spec, note = _spec(node), note_of(node)
    cordoned = bool(spec.get("unschedulable"))
    out = cordoned or tainted(node)
    ours = out and note is not None and (cordon_is_ours(node) if cordoned else True)
    if ours and note is not None:
        reason = str(note.get("reason", ""))
    elif cordoned:
        who = cordon_manager(node)
        reason = f"cordoned by {who}" if who and who != FIELD_MANAGER else "cordoned"
    else:
        reason = "tainted" if out else ""
    return SchedNode(name=_meta(node)["name"], out=out, ours=ours, reason=reason,
                     gpus=k8s_capacity_gpus(node), out_since=_note_time(note) if ours else None)


def _note_time(note: dict[str, Any] | None) -> datetime | None:
    try:
        return datetime.fromisoformat(str((note or {})["at"]).replace("Z", "+00:00"))
    except (KeyError, ValueError):
        return None


class KubernetesBackend:
    name = "kubernetes"

    def __init__(self, api_client: Any, taint: bool = False) -> None:
        from kubernetes import client  # optional: the drain-k8s extra

        self.api_client = api_client
        self.api = Api(api_client)
        self.call = self.api.call
        self.core = client.CoreV1Api(api_client)
        self.taint = taint
        self._listed: dict[str, dict[str, Any]] = {}

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
        return cls(client.ApiClient(), taint)

    def _node(self, name: str) -> dict[str, Any]:
        """The node, read first by every change (none is made to a name off the rule)."""
        node: dict[str, Any] = self.call(f"read node {name}", self.core.read_node,
                                         checked(name))
        return node

    def _patch(self, name: str, body: dict[str, Any]) -> dict[str, Any]:
        node: dict[str, Any] = self.call(f"patch node {name}", self.core.patch_node,
                                         checked(name), body, field_manager=FIELD_MANAGER)
        return node

    def _condition(self, name: str, ready: bool, reason: str) -> None:
        self.call(f"patch node {name} status", self.core.patch_node_status, checked(name),
                  status_patch(ready, reason, datetime.now(UTC)), field_manager=FIELD_MANAGER)

    def nodes(self) -> list[SchedNode]:
        listed = self.call("list nodes", self.core.list_node)
        self._listed = {n["metadata"]["name"]: n for n in listed.get("items") or []}
        return [sched_node(n) for n in self._listed.values()]

    def take_out(self, name: str, reason: str) -> None:
        """Cordon (and opt-in taint) a node that is still schedulable, as read right before;
        a cordon by someone else since the round's listing is theirs: `BackedOff`."""
        for _ in range(RETRIES):
            node = self._node(name)
            seen = sched_node(node)
            if seen.out:
                if seen.ours:
                    return  # an overlapping round took it out already
                raise BackedOff(f"{name} was {seen.reason} by someone else meanwhile: left "
                                "to them")
            try:
                self._patch(name, take_out_patch(reason, datetime.now(UTC), node, self.taint))
            except Conflict:
                continue  # changed since the read: read again, decide again
            self._condition(name, False, reason)
            return
        raise KubernetesError(f"{name}: changed under peerwatch {RETRIES} times in a row; "
                              "not taken out this round")

    def _remove_ours(self, name: str, want_uncordon: bool) -> SchedNode:
        """Remove peerwatch's annotation, taint and (if wanted and its own) cordon, under the
        resourceVersion read; what the node was when it was done."""
        for _ in range(RETRIES):
            node = self._node(name)
            seen = sched_node(node)
            if note_of(node) is None and not tainted(node):
                return seen  # nothing of peerwatch's left on it
            if want_uncordon and seen.out and not seen.ours:
                return seen  # someone else's now: the caller backs off
            try:
                self._patch(name, put_back_patch(node, want_uncordon and cordon_is_ours(node)))
            except Conflict:
                continue
            return seen
        raise KubernetesError(f"{name}: changed under peerwatch {RETRIES} times in a row; "
                              "not put back this round")

    def put_back(self, name: str) -> None:
        """Uncordon, if the cordon is still peerwatch's (read right before, written under
        that resourceVersion); a cordon someone else made since stays: `BackedOff`."""
        seen = self._remove_ours(name, want_uncordon=True)
        if seen.out and not seen.ours:
            raise BackedOff(f"{name} is {seen.reason} by someone else: their cordon kept, "
                            "not put back")
        self._condition(name, True, "peerwatch: fabric healthy")

    def forget(self, name: str) -> None:
        """Someone else owns the node now, or it is gone: remove only peerwatch's annotation
        and taint, never the cordon."""
        try:
            self._remove_ours(name, want_uncordon=False)
        except NotFound:
            return  # deleted: nothing of peerwatch's is left on it

    def publish(self, name: str, facts: NodeFacts) -> None:
        """peerwatch's labels, written only where they change."""
        current = _meta(self._listed.get(name) or {}).get("labels") or {}
        patch = labels_patch(facts, current)
        if patch is not None:
            self._patch(name, patch)

    def lease(self, namespace: str) -> KubeLease:
        return KubeLease(self.api, namespace)
