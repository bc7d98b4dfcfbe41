"""Kubernetes: each pair job is one batch/v1 Job of two pods (Indexed: the index is the
rank), pinned to the two nodes, never both on one (required pod anti-affinity on the node),
at a low, preemptible priority (`priorityClassName`, e.g. one with `preemptionPolicy: Never`
and a value below every workload's), and queued through Kueue where a queue is configured
(the `kueue.x-k8s.io/queue-name` label; created suspended, Kueue admits it when there is room).

Least privilege: the pods get no service-account token (`automountServiceAccountToken:
false`) and no Secret; each rank reads its own node's probe credential from the node (a
read-only hostPath of that one file), so no credential is copied into the cluster's API.

Rendered and unit-tested only: this has NOT run against a live API server here
(docs/network.md). `manifest()` is what `peerwatch pairs --scheduler kubernetes --dry-run`
prints; submitting is `kubectl create -f -` of it, the account holding only `create` on
Jobs in the namespace.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from typing import Any

CREDENTIAL = "/etc/peerwatch/probe-token"


class KubernetesSubmitError(RuntimeError):
    """kubectl failed; the message holds its words."""


@dataclass(frozen=True)
class KubernetesPairs:
    server_url: str
    image: str = "ghcr.io/peerwatch/peerwatch:latest"
    namespace: str = "peerwatch"
    priority_class: str = "peerwatch-scavenger"
    queue: str | None = None  # Kueue LocalQueue; None: no Kueue
    gpus_per_rank: int = 1
    deadline_s: int = 600
    kubectl: str = "kubectl"

    name = "kubernetes"

    def manifest(self, job_id: int, host: str, peer: str) -> dict[str, Any]:
        labels = {"app.kubernetes.io/name": "peerwatch-pair",
                  "peerwatch.io/pair-job": str(job_id)}
        if self.queue:
            labels["kueue.x-k8s.io/queue-name"] = self.queue
        return {
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": f"peerwatch-pair-{job_id}", "namespace": self.namespace,
                         "labels": labels},
            "spec": {
                "completions": 2, "parallelism": 2, "completionMode": "Indexed",
                "backoffLimit": 0, "activeDeadlineSeconds": self.deadline_s,
                "ttlSecondsAfterFinished": 3600, "suspend": bool(self.queue),
                "template": {"metadata": {"labels": labels}, "spec": self._pod(job_id, host, peer)},
            },
        }

    def _pod(self, job_id: int, host: str, peer: str) -> dict[str, Any]:
        return {
            "restartPolicy": "Never", "priorityClassName": self.priority_class,
            "automountServiceAccountToken": False,
            "affinity": {
                "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [{
                        "key": "kubernetes.io/hostname", "operator": "In",
                        "values": [host, peer]}]}]}},
                "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
                    "labelSelector": {"matchLabels": {"peerwatch.io/pair-job": str(job_id)}},
                    "topologyKey": "kubernetes.io/hostname"}]},
            },
            "containers": [{
                "name": "rank", "image": self.image,
                "command": ["peerwatch", "pairs", "rank", "--job", str(job_id),
                            "--server", self.server_url],
                "env": [{"name": "PEERWATCH_PAIRS_NODE", "valueFrom": {
                    "fieldRef": {"fieldPath": "spec.nodeName"}}}],
                "resources": {"limits": {"nvidia.com/gpu": self.gpus_per_rank}},
                "securityContext": {"allowPrivilegeEscalation": False,
                                    "readOnlyRootFilesystem": True},
                "volumeMounts": [{"name": "credential", "mountPath": CREDENTIAL,
                                  "readOnly": True}],
            }],
            "volumes": [{"name": "credential", "hostPath": {"path": CREDENTIAL,
                                                            "type": "File"}}],
        }

    def submit(self, job_id: int, host: str, peer: str) -> str:
        done = subprocess.run([self.kubectl, "create", "-f", "-", "-o", "name"],
                              input=json.dumps(self.manifest(job_id, host, peer)),
                              capture_output=True, text=True, timeout=60)
        if done.returncode != 0:
            raise KubernetesSubmitError(f"kubectl create: {done.stderr.strip()}")
        return f"{self.namespace}/{done.stdout.strip().split('/')[-1]}"

    def alive(self, scheduler_jobs: list[str]) -> set[str]:
        """Jobs not finished: neither Complete nor Failed."""
        out = set()
        for ref in scheduler_jobs:
            ns, _, name = ref.partition("/")
            done = subprocess.run([self.kubectl, "get", "job", name, "-n", ns, "-o", "json"],
                                  capture_output=True, text=True, timeout=60)
            if done.returncode != 0:
                continue
            conditions = json.loads(done.stdout).get("status", {}).get("conditions", [])
            if not any(c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
                       for c in conditions):
                out.add(ref)
        return out
