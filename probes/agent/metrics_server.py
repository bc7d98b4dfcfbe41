"""Serve the agent's `/metrics` on its own port (`peerwatch probe --metrics-port`).

A threaded WSGI server (client_python's `ThreadingWSGIServer`) runs beside the probe loop in
a daemon thread and answers every scrape with `AgentExposition`: the host's families from
`AgentCollector`, written by the fast renderer of `probes/metrics_text.py` when a pass is
recorded, then the spool's and the process collector's (the agent's CPU and memory).
The server is closed with the runtime, so a test or the demo can start and stop many.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, make_server

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.exposition import ThreadingWSGIServer

from peerwatch.probes.agent.agent_state import AgentState, AgentView
from peerwatch.probes.agent.metrics import AgentCollector, SpoolGauge
from peerwatch.probes.errors import BadProbeRequest
from peerwatch.probes.metrics_text import render
from peerwatch.probes.report import TestName

log = logging.getLogger(__name__)


class AgentExposition:
    """`expose()` -> the text exposition of this host's series and the agent process.

    The host's series change only when a pass is recorded, so their text is rendered then,
    on the worker's thread (once per pass), and a scrape only adds
    the spool's and the process's few lines: scrapes stay fast however often they come.
    """

    def __init__(self, state: AgentState, spool: SpoolGauge | None = None,
                 tests: Iterable[TestName] | None = None) -> None:
        self.state = state
        self.collector = AgentCollector(state, spool, tests)
        self.process = CollectorRegistry(auto_describe=False)
        ProcessCollector(namespace="peerwatch_probe", registry=self.process)
        self._lock = threading.Lock()
        self._rendered: tuple[AgentView, bytes] | None = None
        state.subscribe(self.host_text)

    def host_text(self, view: AgentView) -> bytes:
        """The host's series as text for `view`, rendered once per view."""
        with self._lock:
            if self._rendered is None or self._rendered[0] is not view:
                self._rendered = (view, render(self.collector.host_families(view)))
            return self._rendered[1]

    def __call__(self) -> bytes:
        view = self.state.view()
        return (render(self.collector.spool_families(view)) + self.host_text(view)
                + generate_latest(self.process))


class _Quiet(WSGIRequestHandler):
    # Headers and body leave in separate writes: with Nagle's algorithm on, the body waits
    # for the client's delayed ACK (~40 ms on Linux), most of a scrape's time.
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
        """Scrapes every 30 s are not news."""


class MetricsServer:
    """An HTTP server answering `GET /metrics` (any path) with `expose()` until `close()`."""

    def __init__(self, expose: Callable[[], bytes], port: int, addr: str = "0.0.0.0") -> None:
        def app(_environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
            body = expose()
            start_response("200 OK", [("Content-Type", CONTENT_TYPE_LATEST),
                                      ("Content-Length", str(len(body)))])
            return [body]

        try:
            self._httpd = make_server(addr, port, app, ThreadingWSGIServer, handler_class=_Quiet)
        except OSError as exc:
            raise BadProbeRequest(
                f"cannot serve metrics on {addr}:{port} (--metrics-port): {exc}") from exc
        self.port = int(self._httpd.server_address[1])
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True,
                                        name="peerwatch-metrics")
        self._thread.start()
        log.info("agent metrics on http://%s:%d/metrics", addr, self.port)

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)
