"""The FastAPI application factory.

`create_app(settings)` builds one app with its own engine and session factory (kept on
`app.state`, never in module globals), and runs the coroutines listed in
`app.state.background_jobs` for as long as it serves. It includes every router found in
`app/routes/`: a module there that defines `router` is served, so adding a resource never
means editing this file. Nothing in the app keeps state other replicas would need: all of it
is in the database.
"""

from __future__ import annotations

import asyncio
import importlib
import pkgutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import APIRouter, FastAPI, Request, status
from fastapi.middleware.gzip import GZipMiddleware
from fastapi.responses import JSONResponse
from starlette.routing import BaseRoute

from peerwatch.app import routes
from peerwatch.app.api.conditional_get import ConditionalGet
from peerwatch.app.api.errors import install_error_handlers
from peerwatch.app.api.json_body import ACCEPT_ENCODING
from peerwatch.app.api.keys import check_credentials
from peerwatch.app.api.openapi import install_openapi
from peerwatch.app.api.response_headers import RequestEncodings, ServerTiming
from peerwatch.app.exposition.ingest import INGEST_PATH, IngestMetricsMiddleware, IngestStats
from peerwatch.app.exposition.judge import JudgeQueueCollector, judge_lag_histogram
from peerwatch.app.ingest.expand import ingest_pool_job, recovery_job
from peerwatch.app.ingest.heard import HeardBook, heard_flush_job
from peerwatch.app.ingest.held import HeldReports
from peerwatch.app.ingest.pool import IngestPool
from peerwatch.app.judging.queue import JudgeQueue, Judges, judge_queue_job
from peerwatch.app.judging.service import alerting_loop, close_alerting, service_for
from peerwatch.app.judging.sessions import make_sessionmaker
from peerwatch.app.judging.shards import JudgeShards, judge_process_job
from peerwatch.app.queries import NotFound
from peerwatch.app.queries.network_kept import KeptJudgements
from peerwatch.app.runtime import heap
from peerwatch.app.runtime.config import Settings
from peerwatch.app.runtime.leadership import Leadership
from peerwatch.app.store.db import make_engine
from peerwatch.probes.heartbeat import HEARTBEATS_PATH
from peerwatch.probes.report import utcnow

API_PREFIX = "/api/v1"

DESCRIPTION = """
peerwatch watches the peer-to-peer fabric of GPU hosts (NVLink, NVSwitch, PCIe).
Probes post one report per pass to `POST /api/v1/reports`; everything else reads what they
measured, judged against the bandwidth the topology should give and each pair's own baseline.
Bandwidth is in bytes per second, latency and durations in seconds, times in UTC.
"""


def discover_routers() -> list[APIRouter]:
    """Every `router` defined by a module in `app/routes/`, in module-name order."""
    found = []
    for info in sorted(pkgutil.iter_modules(routes.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{routes.__name__}.{info.name}")
        router = getattr(module, "router", None)
        if isinstance(router, APIRouter):
            found.append(router)
    return found


# The routes every probe calls, every 30 s each (a heartbeat, a report): matched first.
PROBE_PATHS = frozenset({HEARTBEATS_PATH, INGEST_PATH})


def probes_first(routes: list[BaseRoute]) -> list[BaseRoute]:
    """`routes` with the routers serving the probes' POSTs first. A request is matched
    against the routes in order until one matches in full, and the heartbeat's router
    came 13th of 22: matching was ~28 % of a heartbeat's CPU in this process. Their paths
    are their own (one POST each), so no other route answers differently; the OpenAPI
    document keeps the module-name order (`app.state.documented_routes`)."""
    def serves_probes(route: BaseRoute) -> bool:
        inner = getattr(getattr(route, "original_router", route), "routes", [route])
        return any(getattr(r, "path", None) in PROBE_PATHS for r in inner)
    return sorted(routes, key=lambda r: not serves_probes(r))  # stable: the rest in order


async def _not_found(_request: Request, exc: Exception) -> JSONResponse:
    """Any query's NotFound, as a 404 naming what was not found."""
    return JSONResponse({"detail": str(exc)}, status_code=status.HTTP_404_NOT_FOUND)


def _install_judges(app: FastAPI, settings: Settings, in_process: bool) -> None:
    """What ingest hands hosts to (judged after the 201), and its figures on /metrics:
    in-process, a queue and threads with the periodic round on this event loop; otherwise a
    judge process this app starts, wakes and supervises, which runs the round itself."""
    registry = app.state.ingest_stats.registry
    observe = judge_lag_histogram(registry).observe
    judges: Judges
    if in_process:
        judges = JudgeQueue(lambda host: service_for(app).after_ingest(host),
                            settings.judge_workers, on_lag=observe)
        app.state.background_jobs += [alerting_loop, judge_queue_job]
    else:
        judges = JudgeShards(settings, on_lag=observe, listening_since=app.state.listening_since)
        app.state.background_jobs.append(judge_process_job)
        app.state.ingest_pool = IngestPool(settings)  # reports parsed and stored apart too
        app.state.background_jobs += [ingest_pool_job, recovery_job]
    registry.register(JudgeQueueCollector(judges.load))
    app.state.judge_queue = judges


def create_app(settings: Settings | None = None, judge_in_process: bool = True) -> FastAPI:
    """`judge_in_process=False` (what `serve` runs): judging in a child process
    (`app/judging/process.py`) and reports parsed and stored in worker processes
    (`app/ingest/pool.py`); the default does both in threads of this one (tests, embedding)."""
    settings = settings or Settings()
    engine = make_engine(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        tasks = [asyncio.create_task(job(app)) for job in app.state.background_jobs]
        heap.settle()  # started: the collector leaves start-up's objects be (app/runtime/heap.py)
        try:
            yield
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            close_alerting(app)
            app.state.leadership.release()
            engine.dispose()

    app = FastAPI(title="peerwatch", version="0.1.0", description=DESCRIPTION,
                  lifespan=lifespan, docs_url=None, redoc_url=None)  # /docs: routes/docs.py
    app.state.settings = settings
    # when this replica began to take reports: a restart's silence is not the probes'
    # (app/alerting/listening.py)
    app.state.listening_since = utcnow()
    app.state.engine = engine
    app.state.sessionmaker = make_sessionmaker(engine)
    # Whether this replica runs the once-only periodic jobs (app/runtime/leadership.py).
    app.state.leadership = Leadership(engine)
    # Coroutines `job(app)` run while the app serves (cancelled at shutdown); `serve` adds the
    # maintenance loop here, and anything else that should live as long as the server can.
    app.state.background_jobs = [heard_flush_job]
    check_credentials(app)
    for router in discover_routers():
        app.include_router(router)
    app.state.documented_routes = list(app.router.routes)  # the document keeps this order
    app.router.routes[:] = probes_first(app.router.routes)
    app.add_exception_handler(NotFound, _not_found)
    install_error_handlers(app)
    app.add_middleware(ServerTiming)
    # which bodies the reports route reads compressed (app/api/json_body.py), said on every answer
    app.add_middleware(RequestEncodings, paths=frozenset({INGEST_PATH}),
                       accept=ACCEPT_ENCODING)
    app.state.ingest_stats = IngestStats()  # this replica's ingest health, for /metrics
    _install_judges(app, settings, judge_in_process)
    app.state.heard = HeardBook()  # arrivals and refusals by host, written in batches
    # the full report of each host a heartbeat may stand on (app/ingest/held.py); a host
    # the database no longer has is forgotten by the heard book's flush
    app.state.held = HeldReports()
    # the fleet's network judgement, kept between host pages' polls (queries/network_kept.py)
    app.state.network_judgements = KeptJudgements()
    app.state.heard.on_missing = app.state.held.forget
    app.add_middleware(IngestMetricsMiddleware, stats=app.state.ingest_stats)
    # ETags on the read API: a polling dashboard is sent a bodiless 304 when nothing changed.
    app.add_middleware(ConditionalGet)
    # JSON answers and the dashboard's modules shrink 5-10x (plotly.js comes pre-gzipped);
    # added last, so it is the outermost layer and the ingest metrics see plain answers.
    app.add_middleware(GZipMiddleware, minimum_size=1024)
    install_openapi(app)
    return app
