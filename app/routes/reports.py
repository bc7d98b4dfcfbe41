"""`POST /api/v1/reports`: where probes deliver their reports.

The body is read by hand rather than declared as a parameter, so the checks run in the
order that gives the most useful error: token (401/403, before any byte is read), size
(413, while reading), JSON (422), `schema_version` (400 naming the supported versions, before
full validation, so a newer probe is told to upgrade the server rather than shown fifty field
errors), then the full wire model and the report's coherence (422 naming each field).

Only reading the body happens on the event loop. Parsing (orjson), validation and the
transaction run in a worker thread — under `serve`, a worker process (`app/ingest/pool.py`),
so the event loop never waits for their GIL — while the report holds an ingest slot
(`app.ingest.gate`):
a saturated process answers 429/503 with Retry-After at once, and a client that went away
while its report waited for a slot costs nothing more. The report is judged after the answer,
off the request path: its host goes to the judges (`app/judging/queue.py`; under
`serve` a process of their own, `app/judging/process.py`). Under `serve` the answer
comes even earlier: once the worker has checked the report and stored it whole, before its
rows are written (`app/ingest/expand.py`); the 201's counts are the rows it will store.
"""

from __future__ import annotations

from concurrent.futures.process import BrokenProcessPool
from datetime import datetime
from typing import Any

from fastapi import APIRouter, HTTPException, Request, Response, status
from starlette.concurrency import run_in_threadpool

from peerwatch.app.api.deps import ProbeDep, SettingsDep, forbidden_host
from peerwatch.app.api.json_body import CLIENT_CLOSED_REQUEST, check_encoding, read_limited_body
from peerwatch.app.ingest.expand import expansions_for
from peerwatch.app.ingest.gate import IngestGate, Saturated, gate_for
from peerwatch.app.ingest.heard import heard_for
from peerwatch.app.ingest.held import held_for
from peerwatch.app.ingest.pool import IngestPool, Ticket, pool_for
from peerwatch.app.ingest.posted import (
    DatabaseLocked,
    is_canonical,
    receive_and_expand,
    store_posted,
)
from peerwatch.app.ingest.rows import probe_sent_at
from peerwatch.app.judging.queue import judges_for
from peerwatch.app.runtime.config import Settings
from peerwatch.app.runtime.credentials import Identity
from peerwatch.app.schemas.ingest import IngestResult
from peerwatch.probes.agent.clock_offset import OFFSET_HEADER
from peerwatch.probes.agent.sender import HOST_HEADER, SENT_AT_HEADER, WIRE_HEADER
from peerwatch.probes.report import utcnow

router = APIRouter(prefix="/api/v1/reports", tags=["ingest"])

REPORT_SCHEMA_REF = "#/components/schemas/Report"


@router.post(
    "",
    response_model=IngestResult,
    status_code=status.HTTP_201_CREATED,
    summary="Store one probe report",
    responses={
        200: {"model": IngestResult, "description": "Stored before (same report_id): "
                                                    "nothing changed, `duplicate` is true."},
        400: {"description": "Unsupported schema_version (the detail names the supported)."},
        401: {"description": "No bearer token."},
        409: {"description": "This report_id was stored before with a different body."},
        403: {"description": "The bearer token is not a probe credential, or its host is "
                             "not the report's (X-Peerwatch-Host or the body's `host`)."},
        413: {"description": "Body larger than PEERWATCH_MAX_BODY_BYTES (gzip: once "
                             "inflated)."},
        415: {"description": "A Content-Encoding other than gzip (the answer's "
                             "`Accept-Encoding` names what is read)."},
        429: {"description": "Ingest saturated (PEERWATCH_INGEST_QUEUE full): nothing was "
                             "done; retry after the `Retry-After` seconds."},
        503: {"description": "No ingest slot within PEERWATCH_INGEST_WAIT_S, or the "
                             "database was locked; retry after `Retry-After` seconds."},
    },
    openapi_extra={"requestBody": {
        "required": True,
        "content": {"application/json": {"schema": {"$ref": REPORT_SCHEMA_REF}}},
    }},
)
async def post_report(request: Request, response: Response, speaker: ProbeDep,
                      settings: SettingsDep) -> IngestResult:
    """Idempotent on `report_id`; all of a report is stored, or none of it."""
    arrived = utcnow()  # before any wait: what receipt and clock skew are measured from
    heard = heard_for(request.app)
    host = request.headers.get(HOST_HEADER)
    if host is not None and (refused := forbidden_host(speaker, host)):
        raise refused  # the host it names is not its own: refused before the body is read
    heard.heard(host, arrived)  # heard now, however long the report takes to store
    try:
        result, later = await _store_in_turn(request, settings, arrived, speaker)
    except Saturated:  # the probe was heard from: its host is busy, not silent
        heard.note(host, arrived)
        raise
    heard.stored(result.host, arrived)
    held_for(request.app).noted(result.host, result.report_id)  # a heartbeat may stand on it
    if result.duplicate:
        response.status_code = status.HTTP_200_OK
    elif not later:  # judged after the answer, by the judge queue (app/judging/queue.py)
        judges_for(request.app).submit(result.host, arrived.timestamp())
    return result


async def _store_in_turn(request: Request, settings: Settings, arrived: datetime,
                         speaker: Identity) -> tuple[IngestResult, bool]:
    """Read the body and store it in an ingest slot; `Saturated` when none is free. True
    beside the answer when the report was stored whole and is expanded (and judged) after
    it (`serve`: `app/ingest/expand.py`)."""
    gate = gate_for(request.app)
    encoding = request.headers.get("content-encoding")
    check_encoding(encoding)  # 415 for a coding not read here, before the body is received
    with gate.receiving():  # saturated: refused before the body is even received
        body = await read_limited_body(request, settings.max_body_bytes, "report")
    async with gate.slot(admitted=True):
        if await request.is_disconnected():  # it gave up waiting: do no work for it
            gate.stats.client_gone += 1
            raise HTTPException(CLIENT_CLOSED_REQUEST, detail="client went away")
        sent_at = probe_sent_at(request.headers.get(OFFSET_HEADER),
                                request.headers.get(SENT_AT_HEADER), arrived)
        canonical = is_canonical(request.headers.get(WIRE_HEADER))
        pool = pool_for(request.app)
        if pool is None:  # in-process: a thread of this process, answered once stored
            result = await run_in_threadpool(store_body, request.app, gate, body, settings,
                                             arrived, sent_at, canonical, encoding, speaker)
            gate.stats.accepted += 1
            return result, False
        result, ticket = await _receive_in_pool(pool, gate, request.headers.get(HOST_HEADER),
                                                body, arrived, sent_at, canonical, encoding,
                                                speaker)
        gate.stats.accepted += 1
    if ticket is not None:  # the slot is let go: the expansions have their own bound
        expansions_for(request.app).start(pool, ticket, arrived)
    return result, ticket is not None


async def _receive_in_pool(pool: IngestPool, gate: IngestGate, host: str | None, body: bytes,
                           arrived: datetime, sent_at: datetime | None, canonical: bool,
                           encoding: str | None, speaker: Identity
                           ) -> tuple[IngestResult, Ticket | None]:
    """In an ingest worker process (`serve`): the event loop never waits for their GIL."""
    try:
        return await pool.receive(host, body, arrived, sent_at, canonical, encoding,
                                  speaker)
    except DatabaseLocked:
        raise gate.locked() from None
    except BrokenProcessPool:
        raise gate.worker_died() from None


def store_body(app: Any, gate: IngestGate, body: bytes, settings: Settings,
               now: datetime, sent_at: datetime | None = None, canonical: bool = False,
               encoding: str | None = None, speaker: Identity | None = None) -> IngestResult:
    """Parse, validate and store one report received at `now`: a worker thread's part, off
    the event loop, as an ingest worker's (`posted_report.store_posted`; the session is
    opened there too, so a refused report never costs a thread-pool hop for it)."""
    # under `serve` (its workers still starting) received whole first, as the workers do,
    # so a copy another replica receives meanwhile is a duplicate (`receive_and_expand`)
    store = receive_and_expand if getattr(app.state, "ingest_pool", None) else store_posted
    try:
        return store(app.state.sessionmaker, body, settings, now, sent_at, gate.writing,
                     canonical, encoding, speaker)
    except DatabaseLocked:
        raise gate.locked() from None
