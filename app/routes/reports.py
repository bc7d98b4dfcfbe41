"""`POST /api/v1/reports`: where probes deliver their reports.

The body is read by hand rather than declared as a parameter, so the checks run in the
order that gives the most useful error: token (401/403, before any byte is read), size
(413, while reading), JSON (422), `schema_version` (400 naming the supported versions, before
full validation, so a newer probe is told to upgrade the server rather than shown fifty field
errors), then the full wire model and the report's coherence (422 naming each field).

Only reading the body happens on the event loop. Parsing (orjson), validation and the
transaction run in a worker thread while the report holds an ingest slot (`app.ingest_gate`):
a saturated process answers 429/503 with Retry-After at once, and a client that went away
while its report waited for a slot costs nothing more.
"""

from __future__ import annotations

import json
from typing import Any

import orjson
from fastapi import APIRouter, HTTPException, Request, Response, status
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError
from sqlalchemy.exc import OperationalError
from starlette.concurrency import run_in_threadpool

from app.alerting.service import service_for
from app.config import Settings
from app.deps import ProbeTokenDep, SettingsDep
from app.errors import body_errors
from app.ingest_gate import IngestGate, gate_for
from app.schemas import IngestResult
from app.services.ingest import ingest
from app.services.report_checks import check_report, oversized_integers
from probes.report import SUPPORTED_SCHEMA_VERSIONS, Report, utcnow

router = APIRouter(prefix="/api/v1/reports", tags=["ingest"])

CLIENT_CLOSED_REQUEST = 499  # nginx's code: nobody is listening for the answer
REPORT_SCHEMA_REF = "#/components/schemas/Report"
# An integer beyond 64 bits has 19+ digits in a row; the digits after a float's point do not
# count (a sweep has dozens of those). Finding such a run in the bytes (every digit mapped to
# "0", then a plain `find`) is ~10x faster than a regex; walking the parsed tree to name the
# field is done only when one is found.
_DIGITS_TO_ZERO = bytes.maketrans(b"0123456789", b"0" * 10)
_LONG_RUN = b"0" * 19
_ZERO = ord("0")


def may_hold_long_integer(body: bytes) -> bool:
    """False only when no integer of 19+ digits can be in `body`."""
    flat = body.translate(_DIGITS_TO_ZERO)
    at = flat.find(_LONG_RUN)
    while at != -1:
        if at == 0 or body[at - 1] != ord("."):
            return True
        end = at + len(_LONG_RUN)
        while end < len(flat) and flat[end] == _ZERO:
            end += 1
        at = flat.find(_LONG_RUN, end)
    return False


async def read_limited_body(request: Request, limit: int) -> bytes:
    """The request body, or 413 as soon as it is known to exceed `limit` bytes."""
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise _too_large(int(declared), limit)
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _too_large(size, limit)
        chunks.append(chunk)
    return b"".join(chunks)


def _too_large(size: int, limit: int) -> HTTPException:
    return HTTPException(
        status.HTTP_413_CONTENT_TOO_LARGE,
        detail=f"report body of {size} bytes exceeds the limit of {limit} bytes "
               "(PEERWATCH_MAX_BODY_BYTES)",
    )


def load_json(body: bytes) -> Any:
    """The parsed body. orjson first (several times faster on a 250 kB sweep); what it
    refuses but the standard parser reads (NaN, integers past 64 bits) goes through the
    standard parser, so those values reach the checks that name their field."""
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        pass
    try:
        return json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise body_errors([{"type": "json_invalid", "loc": (),
                             "msg": f"body is not valid JSON: {exc}"}]) from exc
    except RecursionError as exc:
        raise _too_deep() from exc


def _too_deep() -> RequestValidationError:
    return body_errors([{"type": "json_invalid", "loc": (),
                          "msg": "body nests JSON too deeply for a report"}])


def validate_report(data: dict[str, Any]) -> Report:
    """The wire model (422 naming each field)."""
    try:
        return Report.model_validate(data)
    except RecursionError as exc:
        raise _too_deep() from exc
    except ValidationError as exc:
        raise body_errors([dict(e) for e in exc.errors(include_url=False)]) from exc
    except TypeError as exc:  # e.g. comparing a naive with an aware timestamp
        raise body_errors([{"type": "value_error", "loc": (), "msg": str(exc)}]) from exc


def parse_report(body: bytes) -> Report:
    """JSON -> schema_version check (400) -> 64-bit check -> wire model (422s)."""
    data = load_json(body)
    if not isinstance(data, dict):
        raise body_errors([{"type": "model_type", "loc": (),
                             "msg": "a report must be a JSON object"}])
    version = data.get("schema_version", SUPPORTED_SCHEMA_VERSIONS[-1])
    if version not in SUPPORTED_SCHEMA_VERSIONS:
        raise HTTPException(
            status.HTTP_400_BAD_REQUEST,
            detail=f"unsupported schema_version {version!r}; this server supports "
                   f"{list(SUPPORTED_SCHEMA_VERSIONS)}",
        )
    if may_hold_long_integer(body) and (too_large := oversized_integers(data)):
        raise body_errors(too_large)
    return validate_report(data)


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
        403: {"description": "The bearer token is not a probe token."},
        413: {"description": "Body larger than PEERWATCH_MAX_BODY_BYTES."},
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
async def post_report(request: Request, response: Response, _token: ProbeTokenDep,
                      settings: SettingsDep) -> IngestResult:
    """Idempotent on `report_id`; all of a report is stored, or none of it."""
    gate = gate_for(request.app)
    gate.refuse_if_full()  # saturated: refused before the body is even received
    body = await read_limited_body(request, settings.max_body_bytes)
    async with gate.slot():
        if await request.is_disconnected():  # it gave up waiting: do no work for it
            gate.stats.client_gone += 1
            raise HTTPException(CLIENT_CLOSED_REQUEST, detail="client went away")
        result = await run_in_threadpool(store_body, request.app, gate, body, settings)
        gate.stats.accepted += 1
        if result.duplicate:
            response.status_code = status.HTTP_200_OK
        else:  # the alert rules for this host, now that its report is committed (never raises)
            await run_in_threadpool(service_for(request.app).after_ingest, result.host)
    return result


def store_body(app: Any, gate: IngestGate, body: bytes, settings: Settings) -> IngestResult:
    """Parse, validate and store one report: a worker thread's part, off the event loop (the
    session is opened here too, so a refused report never costs a thread-pool hop for it)."""
    report = parse_report(body)
    now = utcnow()
    problems = check_report(report, now)
    if problems:
        raise body_errors(problems)
    try:
        with gate.writing(), app.state.sessionmaker() as session:
            return ingest(session, report, settings, now)
    except OperationalError as exc:
        if "database is locked" in str(exc):
            raise gate.locked() from exc
        raise
