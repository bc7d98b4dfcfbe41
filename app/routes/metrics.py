"""`GET /metrics`: Prometheus exposition of the fleet's judged state and this replica's ingest.

The fleet's families (`PeerwatchCollector`, gauges only, names fixed) are written by the
one-pass renderer the agents use (`probes/metrics_text.py`, byte for byte what client_python
writes, and faster: ~26 series per host make it count at 1000 hosts); this replica's ingest
counters and histogram go through client_python's `generate_latest` from the app's own
`CollectorRegistry` (never the global one). Per-link and per-pair series are the probe
agents' (docs/alerts.md).
"""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from peerwatch.app.alerting.listening import listening_families
from peerwatch.app.exposition.collector import PeerwatchCollector
from peerwatch.app.exposition.drain import drain_families
from peerwatch.app.exposition.ingest import IngestStats
from peerwatch.app.exposition.loader import load_snapshot
from peerwatch.app.exposition.network import network_families
from peerwatch.app.exposition.snapshot import FleetSnapshot
from peerwatch.app.judging.service import service_for
from peerwatch.probes.metrics_text import render
from peerwatch.probes.report import utcnow

router = APIRouter(tags=["metrics"])


def collector_for(request: Request) -> PeerwatchCollector:
    state = request.app.state
    collector: PeerwatchCollector | None = getattr(state, "metrics_collector", None)
    if collector is None:
        sessions = state.sessionmaker

        def load(gpus: bool) -> FleetSnapshot:
            with sessions() as session:
                return load_snapshot(session, gpus)

        collector = PeerwatchCollector(load, service_for(request.app).alerting)
        state.metrics_collector = collector
    return collector


@router.get("/metrics", summary="Prometheus metrics (text exposition format)",
            response_class=Response,
            responses={200: {"content": {CONTENT_TYPE_LATEST: {}},
                             "description": "peerwatch_* series; see docs/alerts.md"}})
def metrics(request: Request) -> Response:
    body = render(collector_for(request).collect())
    with request.app.state.sessionmaker() as session:
        body += render(drain_families(session))
        body += render(network_families(session, request.app.state.settings, utcnow()))
    listening = service_for(request.app).listening()
    if listening is not None:
        body += render(listening_families(listening))
    stats: IngestStats | None = getattr(request.app.state, "ingest_stats", None)
    if stats is not None:
        body += generate_latest(stats.registry)
    return Response(body, media_type=CONTENT_TYPE_LATEST)
