"""`GET /metrics`: Prometheus exposition of the fleet's judged state and this replica's ingest.

Each app gets its own `CollectorRegistry` (never client_python's global one), so two apps in
one process (tests; SQLite and PostgreSQL side by side) never mix, and the exposition holds
peerwatch's metrics only. Per-link and per-pair series are the probe agents' (docs/alerts.md).
"""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from app.alerting.service import service_for
from app.metrics import PeerwatchCollector
from app.metrics_ingest import IngestStats
from app.metrics_loader import load_snapshot
from app.metrics_snapshot import FleetSnapshot

router = APIRouter(tags=["metrics"])


def registry_for(request: Request) -> CollectorRegistry:
    state = request.app.state
    registry: CollectorRegistry | None = getattr(state, "metrics_registry", None)
    if registry is None:
        sessions = state.sessionmaker

        def load(gpus: bool) -> FleetSnapshot:
            with sessions() as session:
                return load_snapshot(session, gpus)

        registry = CollectorRegistry(auto_describe=False)
        registry.register(PeerwatchCollector(load, service_for(request.app).alerting))
        stats: IngestStats | None = getattr(state, "ingest_stats", None)
        if stats is not None:
            registry.register(stats.registry)  # a registry is a collector too
        state.metrics_registry = registry
    return registry


@router.get("/metrics", summary="Prometheus metrics (text exposition format)",
            response_class=Response,
            responses={200: {"content": {CONTENT_TYPE_LATEST: {}},
                             "description": "peerwatch_* series; see docs/alerts.md"}})
def metrics(request: Request) -> Response:
    return Response(generate_latest(registry_for(request)), media_type=CONTENT_TYPE_LATEST)
