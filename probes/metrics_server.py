"""Serve the agent's `/metrics` on its own port (`peerwatch probe --metrics-port`).

client_python's threaded WSGI server runs beside the probe loop in a daemon thread and
answers every scrape from `AgentCollector` through a registry of the agent's own (never
client_python's global one), with the process collector for the agent's CPU and memory.
The server is closed with the runtime, so a test or the demo can start and stop many.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from prometheus_client import CollectorRegistry, ProcessCollector, start_http_server

from probes.agent_state import AgentState
from probes.errors import BadProbeRequest
from probes.metrics import AgentCollector, SpoolGauge
from probes.report import TestName

log = logging.getLogger(__name__)


def agent_registry(state: AgentState, spool: SpoolGauge | None = None,
                   tests: Iterable[TestName] | None = None) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(AgentCollector(state, spool, tests))
    ProcessCollector(namespace="peerwatch_probe", registry=registry)
    return registry


class MetricsServer:
    """An HTTP server answering `GET /metrics` (any path) until `close()`."""

    def __init__(self, registry: CollectorRegistry, port: int, addr: str = "0.0.0.0") -> None:
        try:
            self._httpd, self._thread = start_http_server(port, addr, registry)
        except OSError as exc:
            raise BadProbeRequest(
                f"cannot serve metrics on {addr}:{port} (--metrics-port): {exc}") from exc
        self.port = int(self._httpd.server_address[1])
        log.info("agent metrics on http://%s:%d/metrics", addr, self.port)

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)
