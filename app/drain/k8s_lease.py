"""One acting `peerwatch drain` per cluster: a coordination.k8s.io/v1 Lease (as
client-go's leader election keeps one), `peerwatch-drain` in the controller's namespace.

A controller takes the Lease when no one holds it, when it lapsed (`renewTime` +
`leaseDurationSeconds` passed) or when it is its own, and renews it each round; every write
carries the resourceVersion it was decided from, so of two controllers that both saw it free
only one gets it (the other's write is a 409 Conflict). Times are written as the API's
MicroTime (RFC 3339 with microseconds), through patches: the client's models would drop
the fraction of a whole second, which the API server refuses.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Any

from peerwatch.app.drain.facts import LeaseState
from peerwatch.app.drain.k8s_call import Api, Conflict, NotFound

NAME = "peerwatch-drain"


def micro(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _state(raw: dict[str, Any], holder: str, now: datetime) -> LeaseState:
    spec = raw.get("spec") or {}
    who = spec.get("holderIdentity")
    renewed = spec.get("renewTime")
    if not who or not renewed:
        return LeaseState(False)
    until = datetime.fromisoformat(str(renewed)) + timedelta(
        seconds=float(spec.get("leaseDurationSeconds") or 0))
    if until <= now:
        return LeaseState(False)
    return LeaseState(who == holder, who, until)


class KubeLease:
    def __init__(self, api: Api, namespace: str) -> None:
        from kubernetes import client  # optional: the drain-k8s extra

        self.calls = api
        self.namespace = namespace
        self.api = client.CoordinationV1Api(api.api_client)

    def _read(self) -> dict[str, Any] | None:
        try:
            raw: dict[str, Any] = self.calls.call(
                f"read lease {self.namespace}/{NAME}", self.api.read_namespaced_lease, NAME,
                self.namespace)
        except NotFound:
            return None
        return raw

    def _create(self) -> None:
        try:
            self.calls.call(f"create lease {self.namespace}/{NAME}",
                              self.api.create_namespaced_lease, self.namespace,
                              {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                               "metadata": {"name": NAME, "namespace": self.namespace},
                               "spec": {}})
        except Conflict:
            pass  # another controller created it first: it is read next

    def peek(self, holder: str) -> LeaseState:
        raw = self._read()
        return _state(raw, holder, datetime.now(UTC)) if raw else LeaseState(False)

    def take(self, holder: str, ttl_s: float) -> LeaseState:
        raw = self._read()
        if raw is None:
            self._create()
            raw = self._read() or {}
        now = datetime.now(UTC)
        seen = _state(raw, holder, now)
        if seen.holder not in (None, holder):
            return seen
        spec = raw.get("spec") or {}
        mine = spec.get("holderIdentity") == holder and seen.held
        body = {"metadata": {"resourceVersion": (raw.get("metadata") or {}).get(
                    "resourceVersion")},
                "spec": {"holderIdentity": holder,
                         "leaseDurationSeconds": max(1, math.ceil(ttl_s)),
                         "renewTime": micro(now),
                         "acquireTime": spec.get("acquireTime") if mine else micro(now),
                         "leaseTransitions": int(spec.get("leaseTransitions") or 0)
                         + (0 if mine else 1)}}
        try:
            self.calls.call(f"take lease {self.namespace}/{NAME}",
                              self.api.patch_namespaced_lease, NAME, self.namespace, body,
                              field_manager="peerwatch-drain")
        except Conflict:
            raw = self._read() or {}
            return _state(raw, holder, datetime.now(UTC))  # another took it meanwhile
        return LeaseState(True, holder, now + timedelta(seconds=ttl_s))

    def release(self, holder: str) -> None:
        raw = self._read()
        if raw is None or (raw.get("spec") or {}).get("holderIdentity") != holder:
            return
        self.calls.call(f"release lease {self.namespace}/{NAME}",
                          self.api.patch_namespaced_lease, NAME, self.namespace,
                          {"metadata": {"resourceVersion": raw["metadata"]["resourceVersion"]},
                           "spec": {"holderIdentity": None, "renewTime": None}},
                          field_manager="peerwatch-drain")
