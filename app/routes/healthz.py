"""`GET /healthz` (liveness) and `GET /readyz` (readiness).

Liveness answers from memory on the event loop: it never waits behind ingest, the thread
pool or the database, so a busy replica is never restarted for being busy. Its schema
revision is the one read at startup (and refreshed by each readiness check).

Readiness asks the database (`SELECT 1` and the migration revision) in a thread of its own,
bounded by READY_TIMEOUT_S, one check at a time however often it is polled; it says "busy"
(503) while the ingest gate is saturated, so a load balancer sends reports elsewhere, and
"unavailable" (503) when the database cannot be reached in time. It shows the judge queue
too: hosts waiting for their judgement and the judge lag (report arrival to stored verdict).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from dataclasses import asdict
from typing import Any

from fastapi import APIRouter, Request, Response, status
from sqlalchemy import Engine, text

from peerwatch.app.ingest.gate import gate_for
from peerwatch.app.judging.queue import judges_for
from peerwatch.app.schemas.readiness import Healthz, IngestLoad, JudgeLoad, Readyz
from peerwatch.app.store.db import current_revision

READY_TIMEOUT_S = 2.0


def _check_database(engine: Engine) -> str | None:
    with engine.connect() as conn:
        conn.execute(text("SELECT 1"))
    return current_revision(engine)


async def _revision(app: Any) -> str | None:
    """The database's revision, read in a thread; a check already running is shared."""
    task: asyncio.Task[str | None] | None = getattr(app.state, "readiness_check", None)
    if task is None or task.done():
        task = asyncio.ensure_future(asyncio.to_thread(_check_database, app.state.engine))
        app.state.readiness_check = task
    revision = await asyncio.wait_for(asyncio.shield(task), READY_TIMEOUT_S)
    app.state.schema_revision = revision
    return revision


@asynccontextmanager
async def _read_revision_at_start(app: Any) -> AsyncIterator[None]:
    app.state.schema_revision = None
    with suppress(Exception):  # an unreachable database is readiness's business
        await _revision(app)
    yield


router = APIRouter(tags=["health"], lifespan=_read_revision_at_start)


@router.get("/healthz", response_model=Healthz, summary="Liveness (never waits)")
async def healthz(request: Request) -> Healthz:
    """200 while the process serves; no I/O."""
    state = request.app.state
    return Healthz(status="ok", database=state.engine.dialect.name,
                   schema_revision=getattr(state, "schema_revision", None))


@router.get("/readyz", response_model=Readyz, summary="Readiness: database and ingest load",
            responses={503: {"model": Readyz, "description": "busy or unavailable"}})
async def readyz(request: Request, response: Response) -> Readyz:
    """200 "ready"; 503 "busy" while ingest is saturated, "unavailable" without a database."""
    app = request.app
    gate = gate_for(app)
    load = IngestLoad(concurrency=gate.concurrency, queue=gate.queue, **asdict(gate.stats))
    ready = Readyz(status="ready", database=app.state.engine.dialect.name,
                   schema_revision=getattr(app.state, "schema_revision", None), ingest=load,
                   judge=JudgeLoad(**asdict(judges_for(app).load())))
    try:
        ready.schema_revision = await _revision(app)
    except Exception as exc:  # noqa: BLE001 - whatever it was, this replica is not ready
        response.status_code = status.HTTP_503_SERVICE_UNAVAILABLE
        ready.status, ready.detail = "unavailable", f"database: {type(exc).__name__}"
        return ready
    if gate.saturated:
        response.status_code = status.HTTP_503_SERVICE_UNAVAILABLE
        ready.status, ready.detail = "busy", "ingest saturated"
    return ready
