"""Ingest health of this replica, for `/metrics`: reports received by outcome, and latency.

Counted in process by an ASGI middleware around `POST /api/v1/reports` (kept apart from the
route, so the ingest path can change without touching what is measured of it). Each replica
counts its own requests; Prometheus tells replicas apart by `instance`, so scrape every
replica (Kubernetes pod discovery) to see them all, and sum over `instance` for the fleet.
"""

from __future__ import annotations

import time
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from starlette.types import ASGIApp, Message, Receive, Scope, Send

INGEST_PATH = "/api/v1/reports"
# Seconds: from an inventory report on a quiet server to the probe's own 10 s timeout.
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


def outcome_of(status: int) -> str:
    """The `outcome` label of a response status (a handful of values, never the code)."""
    if status == 201:
        return "stored"
    if status == 200:
        return "duplicate"
    if status in (401, 403):
        return "unauthorized"
    if status in (429, 503):
        return "busy"
    if status >= 500:
        return "failed"
    return "rejected"  # 400 schema version, 413 too large, 422 invalid


class IngestStats:
    """The replica's ingest counters, registered in the app's own registry."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry(auto_describe=False)
        self.reports = Counter(
            "peerwatch_ingest_reports", "Reports received by this replica, by outcome "
            "(stored, duplicate, rejected, unauthorized, busy, failed).", ["outcome"],
            registry=self.registry)
        self.seconds = Histogram(
            "peerwatch_ingest_duration_seconds", "Time to answer a report that was stored "
            "(or found stored before), from the first byte read to the answer.",
            buckets=BUCKETS, registry=self.registry)
        self.in_progress = Gauge(
            "peerwatch_ingest_in_progress", "Reports this replica is handling now.",
            registry=self.registry)
        for outcome in ("stored", "duplicate", "rejected", "unauthorized", "busy", "failed"):
            self.reports.labels(outcome)  # every outcome shows, at 0, from the start

    def observe(self, status: int, seconds: float) -> None:
        outcome = outcome_of(status)
        self.reports.labels(outcome).inc()
        if outcome in ("stored", "duplicate"):
            self.seconds.observe(seconds)


class IngestMetricsMiddleware:
    """Times `POST /api/v1/reports` and counts its answers; every other request passes by."""

    def __init__(self, app: ASGIApp, stats: IngestStats) -> None:
        self.app = app
        self.stats = stats

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (scope["type"] != "http" or scope.get("method") != "POST"
                or scope.get("path", "").rstrip("/") != INGEST_PATH):
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status: dict[str, Any] = {"code": 500}  # an exception that escapes is a failure

        async def send_and_note(message: Message) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            await send(message)

        self.stats.in_progress.inc()
        try:
            await self.app(scope, receive, send_and_note)
        finally:
            self.stats.in_progress.dec()
            self.stats.observe(status["code"], time.perf_counter() - started)
