"""One call to the Kubernetes API through the official client, its answer as the API's JSON
and its failure as one line: 409 `Conflict` (changed since read, or already exists), 404
`NotFound`, anything else `KubernetesError`. Shared by the node backend and the Lease."""

from __future__ import annotations

from typing import Any

from peerwatch.app.drain.policy import one_line


class KubernetesError(RuntimeError):
    """The API server refused or could not be reached; the message holds its words."""


class Conflict(KubernetesError):
    """409: the object changed since it was read (or already exists)."""


class NotFound(KubernetesError):
    """404: no such object."""


class Api:
    def __init__(self, api_client: Any) -> None:
        self.api_client = api_client

    def call(self, what: str, fn: Any, *args: Any, **kw: Any) -> Any:
        from kubernetes.client.exceptions import ApiException  # the drain-k8s extra

        try:
            return self.api_client.sanitize_for_serialization(fn(*args, **kw))
        except ApiException as exc:
            kind = {409: Conflict, 404: NotFound}.get(exc.status or 0, KubernetesError)
            raise kind(f"{what}: {exc.status} {one_line(str(exc.reason or exc), 300)}") from exc
        except Exception as exc:  # urllib3 errors: one line, the object named
            raise KubernetesError(f"{what}: {one_line(str(exc), 300)}") from exc
