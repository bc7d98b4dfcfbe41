"""A fake Kubernetes API server over real HTTP, for the drain backend's tests: no real API
server can run here (no registry ships kube-apiserver; see docs/drain.md), so this one does
what the backend relies on, the way the API server does it, and records every request.

- Nodes: list, read, PATCH of the node and of `nodes/status` (strategic merge patch: maps
  merged, null deletes a key, `status.conditions` merged by `type`, every other list, the
  atomic `spec.taints` included, replaced whole; JSON merge patch: every list replaced). A
  status patch changes only status; a node patch never changes status.
- Optimistic concurrency: every write bumps the object's `metadata.resourceVersion`; a patch
  carrying another resourceVersion is refused with 409 Conflict (the API's Status body).
- managedFields: the field manager (`?fieldManager=`) of each field a write changed, as the
  API server tracks Update operations (a write that changes nothing moves no ownership).
- Every node written is validated against the Kubernetes API schema (kubernetes-validate,
  strict): an invalid one is refused with 422, as the API server would.
- coordination.k8s.io/v1 Leases: read, create (409 AlreadyExists), PATCH with the same
  resourceVersion rule; renewTime and acquireTime must be MicroTime (6-digit fraction).
- `before_write`: a test's change made by "someone else" between the backend's read and its
  next write (a person's cordon, another controller's taint).
"""

from __future__ import annotations

import copy
import json
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import kubernetes_validate

from tests.threaded_server import running

K8S = "1.33.0"
MERGED_BY = {("status", "conditions"): "type"}  # strategic merge keys the backend meets
MICRO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}(Z|[+-]\d\d:\d\d)$")
LEASES = re.compile(r"^/apis/coordination\.k8s\.io/v1/namespaces/([^/]+)/leases(?:/([^/]+))?$")
NODES = re.compile(r"^/api/v1/nodes(?:/([^/]+)(/status)?)?$")


class ApiError(Exception):
    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.code, self.reason, self.message = code, reason, message

    def status(self) -> dict[str, Any]:
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": self.message, "reason": self.reason, "code": self.code}


def merge(into: dict[str, Any], patch: dict[str, Any], strategic: bool,
          path: tuple[str, ...] = ()) -> None:
    for key, value in patch.items():
        where = (*path, key)
        if value is None:
            into.pop(key, None)
        elif strategic and where in MERGED_BY and isinstance(value, list):
            merge_key = MERGED_BY[where]
            items = {i[merge_key]: i for i in into.get(key) or []}
            items.update({i[merge_key]: copy.deepcopy(i) for i in value})
            into[key] = list(items.values())
        elif isinstance(value, dict):
            if not isinstance(into.get(key), dict):
                into[key] = {}
            merge(into[key], value, strategic, where)
        else:
            into[key] = copy.deepcopy(value)


def _leaves(obj: Any, path: tuple[str, ...] = ()) -> dict[tuple[str, ...], Any]:
    if isinstance(obj, dict) and obj:
        out: dict[tuple[str, ...], Any] = {}
        for k, v in obj.items():
            out.update(_leaves(v, (*path, k)))
        return out
    return {path: obj}


def _changed(before: dict[str, Any], after: dict[str, Any]) -> set[tuple[str, ...]]:
    a, b = _leaves(before), _leaves(after)
    return {p for p in set(a) | set(b) if a.get(p) != b.get(p)
            and p[:1] in (("spec",), ("metadata",)) and p[:2] not in (
                ("metadata", "resourceVersion"), ("metadata", "managedFields"))}


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    content_type: str
    body: Any
    status: int = 0


@dataclass
class FakeKubeApi:
    """The state and the rules; `serve()` puts it on HTTP."""

    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    leases: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    requests: list[Request] = field(default_factory=list)
    owners: dict[str, dict[tuple[str, ...], str]] = field(default_factory=dict)
    before_write: list[Callable[[FakeKubeApi], None]] = field(default_factory=list)
    version: int = 100
    lock: threading.RLock = field(default_factory=threading.RLock)

    def add(self, node: dict[str, Any]) -> None:
        with self.lock:
            name = node["metadata"]["name"]
            self.nodes[name] = copy.deepcopy(node)
            self._bump(self.nodes[name])

    def _bump(self, obj: dict[str, Any]) -> None:
        self.version += 1
        obj.setdefault("metadata", {})["resourceVersion"] = str(self.version)

    def node(self, name: str) -> dict[str, Any]:
        if name not in self.nodes:
            raise ApiError(404, "NotFound", f'nodes "{name}" not found')
        out = copy.deepcopy(self.nodes[name])
        out["metadata"]["managedFields"] = self._managed(name)
        return out

    def _managed(self, name: str) -> list[dict[str, Any]]:
        by: dict[str, dict[str, Any]] = {}
        for path, manager in sorted(self.owners.get(name, {}).items()):
            tree = by.setdefault(manager, {})
            for key in path:
                tree = tree.setdefault(f"f:{key}", {})
        return [{"manager": m, "operation": "Update", "apiVersion": "v1",
                 "fieldsType": "FieldsV1", "fieldsV1": f} for m, f in by.items()]

    def patch_node(self, name: str, patch: dict[str, Any], kind: str, manager: str,
                   status: bool = False) -> dict[str, Any]:
        """A PATCH as the API server applies it (also a test's "someone else" write)."""
        with self.lock:
            current = self.node(name)
            patch = copy.deepcopy(patch)
            wanted = (patch.get("metadata") or {}).pop("resourceVersion", None)
            if wanted is not None and wanted != current["metadata"]["resourceVersion"]:
                raise ApiError(409, "Conflict", f'Operation cannot be fulfilled on nodes "{name}"'
                               ": the object has been modified; please apply your changes to "
                               "the latest version and try again")
            before = self.nodes[name]
            after = copy.deepcopy(before)
            part = {"status": patch.get("status", {})} if status else \
                {k: v for k, v in patch.items() if k != "status"}
            merge(after, part, kind == "strategic")
            _validate(after)
            changed = _changed(before, after)
            if after == before:
                return self.node(name)  # no change: no new resourceVersion, no ownership
            for path in changed:
                self.owners.setdefault(name, {})[path] = manager
            self.nodes[name] = after
            self._bump(after)
            return self.node(name)

    def lease(self, ns: str, name: str) -> dict[str, Any]:
        if (ns, name) not in self.leases:
            raise ApiError(404, "NotFound", f'leases.coordination.k8s.io "{name}" not found')
        return copy.deepcopy(self.leases[(ns, name)])

    def create_lease(self, ns: str, body: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            name = body["metadata"]["name"]
            if (ns, name) in self.leases:
                raise ApiError(409, "AlreadyExists",
                               f'leases.coordination.k8s.io "{name}" already exists')
            obj = copy.deepcopy(body)
            obj["metadata"]["namespace"] = ns
            _micro_times(obj)
            self.leases[(ns, name)] = obj
            self._bump(obj)
            return self.lease(ns, name)

    def patch_lease(self, ns: str, name: str, patch: dict[str, Any],
                    kind: str) -> dict[str, Any]:
        with self.lock:
            current = self.lease(ns, name)
            patch = copy.deepcopy(patch)
            wanted = (patch.get("metadata") or {}).pop("resourceVersion", None)
            if wanted is not None and wanted != current["metadata"]["resourceVersion"]:
                raise ApiError(409, "Conflict", "Operation cannot be fulfilled on "
                               f'leases.coordination.k8s.io "{name}": the object has been '
                               "modified; please apply your changes to the latest version")
            merge(current, patch, kind == "strategic")
            _micro_times(current)
            self.leases[(ns, name)] = current
            self._bump(current)
            return self.lease(ns, name)

    def written(self, what: str = "nodes") -> list[Request]:
        """The writes (PATCH, POST) under `what` ("nodes", "leases"), in order."""
        return [r for r in self.requests if r.method in ("PATCH", "POST") and what in r.path]


def _validate(node: dict[str, Any]) -> None:
    doc = {k: v for k, v in node.items()}
    doc["metadata"] = {k: v for k, v in node["metadata"].items() if k != "managedFields"}
    try:
        kubernetes_validate.validate(doc, K8S, strict=True)
    except kubernetes_validate.ValidationError as exc:
        raise ApiError(422, "Invalid", f"Node is invalid: {exc}") from exc


def _micro_times(lease: dict[str, Any]) -> None:
    for key in ("renewTime", "acquireTime"):
        value = (lease.get("spec") or {}).get(key)
        if value is not None and not MICRO.match(str(value)):
            raise ApiError(400, "BadRequest", f"spec.{key}: {value!r} is not a MicroTime "
                           "(RFC 3339 with 6 fraction digits)")


PATCH_KINDS = {"application/strategic-merge-patch+json": "strategic",
               "application/merge-patch+json": "merge"}


def _route(api: FakeKubeApi, method: str, path: str, query: dict[str, list[str]],
           content_type: str, body: Any) -> dict[str, Any]:
    manager = (query.get("fieldManager") or ["unknown"])[0]
    if method in ("PATCH",) and content_type not in PATCH_KINDS:
        raise ApiError(415, "UnsupportedMediaType", f"the fake serves {sorted(PATCH_KINDS)}, "
                       f"not {content_type}")
    if m := NODES.match(path):
        name, status = m.group(1), bool(m.group(2))
        if name is None and method == "GET":
            with api.lock:
                items = [api.node(n) for n in sorted(api.nodes)]
            return {"apiVersion": "v1", "kind": "NodeList",
                    "metadata": {"resourceVersion": str(api.version)}, "items": items}
        if name and method == "GET":
            return api.node(name)
        if name and method == "PATCH":
            for change in api.before_write[:]:
                api.before_write.remove(change)
                change(api)
            return api.patch_node(name, body, PATCH_KINDS[content_type], manager, status)
    if m := LEASES.match(path):
        ns, name = m.groups()
        if name and method == "GET":
            return api.lease(ns, name)
        if not name and method == "POST":
            return api.create_lease(ns, body)
        if name and method == "PATCH":
            return api.patch_lease(ns, name, body, PATCH_KINDS[content_type])
    raise ApiError(404, "NotFound", f"the fake does not serve {method} {path}")


class _Handler(BaseHTTPRequestHandler):
    api: FakeKubeApi

    def log_message(self, *_: Any) -> None:
        pass

    def _serve(self) -> None:
        url = urlsplit(self.path)
        size = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(size) if size else b""
        body = json.loads(raw) if raw else None
        request = Request(self.command, url.path, parse_qs(url.query),
                          (self.headers.get("Content-Type") or "").split(";")[0], body)
        self.api.requests.append(request)
        try:
            answer, code = _route(self.api, self.command, url.path, request.query,
                                  request.content_type, body), 200
            code = 201 if self.command == "POST" else 200
        except ApiError as exc:
            answer, code = exc.status(), exc.code
        request.status = code
        data = json.dumps(answer).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_PATCH = do_POST = _serve


@contextmanager
def serve(api: FakeKubeApi) -> Iterator[str]:
    """The fake on 127.0.0.1 (a free port), in a thread; its base URL."""
    handler = type("Handler", (_Handler,), {"api": api})
    with running(ThreadingHTTPServer(("127.0.0.1", 0), handler)) as url:
        yield url


def node(name: str, *, unschedulable: bool = False, taints: list | None = None
         ) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "spec": {"unschedulable": unschedulable, "taints": taints or []},
            "status": {"conditions": [{"type": "Ready", "status": "True", "reason":
                                       "KubeletReady", "message": "kubelet is ready",
                                       "lastHeartbeatTime": "2026-12-01T00:00:00Z",
                                       "lastTransitionTime": "2026-12-01T00:00:00Z"}]}}


def now_micro() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
