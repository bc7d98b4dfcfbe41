"""`POST /api/v1/reports`: where probes deliver their reports.

The body is read by hand rather than declared as a parameter, so the checks run in the
order that gives the most useful error: token (401/403, before any byte is read), size
(413, while reading), JSON (422), `schema_version` (400 naming the supported versions, before
full validation, so a newer probe is told to upgrade the server rather than shown fifty field
errors), then the full wire model and the report's coherence (422 naming each field).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from fastapi import APIRouter, HTTPException, Request, Response, status
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool

from app.alerting.service import service_for
from app.deps import ProbeTokenDep, SessionDep, SettingsDep
from app.schemas import IngestResult
from app.services.ingest import ingest
from app.services.report_checks import check_report, oversized_integers
from probes.report import SUPPORTED_SCHEMA_VERSIONS, Report, utcnow

router = APIRouter(prefix="/api/v1/reports", tags=["ingest"])

REPORT_SCHEMA_REF = "#/components/schemas/Report"
# 19+ digits in a row: the only way an integer beyond 64 bits can appear. Scanning the bytes
# is cheap; walking the parsed tree is done only when this finds something.
LONG_NUMBER = re.compile(rb"\d{19,}")


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


def _json_safe(value: Any) -> Any:
    """NaN and infinities cannot be sent back in JSON: echo them as text."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def _body_errors(errors: list[dict[str, Any]]) -> RequestValidationError:
    """FastAPI's 422 shape, each `loc` starting with "body"; big inputs are not echoed."""
    cleaned = []
    for e in errors:
        item = {k: v for k, v in e.items() if k not in ("url", "ctx", "input")}
        if not isinstance(e.get("input"), dict | list):
            item["input"] = _json_safe(e.get("input"))
        item["loc"] = ("body", *e["loc"])
        cleaned.append(item)
    return RequestValidationError(cleaned)


def parse_report(body: bytes) -> Report:
    """JSON -> schema_version check (400) -> 64-bit check -> wire model (422s)."""
    try:
        data = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _body_errors([{"type": "json_invalid", "loc": (),
                             "msg": f"body is not valid JSON: {exc}"}]) from exc
    except RecursionError as exc:
        raise _body_errors([{"type": "json_invalid", "loc": (),
                             "msg": "body nests JSON too deeply for a report"}]) from exc
    if not isinstance(data, dict):
        raise _body_errors([{"type": "model_type", "loc": (),
                             "msg": "a report must be a JSON object"}])
    version = data.get("schema_version", SUPPORTED_SCHEMA_VERSIONS[-1])
    if version not in SUPPORTED_SCHEMA_VERSIONS:
        raise HTTPException(
            status.HTTP_400_BAD_REQUEST,
            detail=f"unsupported schema_version {version!r}; this server supports "
                   f"{list(SUPPORTED_SCHEMA_VERSIONS)}",
        )
    if LONG_NUMBER.search(body) and (too_large := oversized_integers(data)):
        raise _body_errors(too_large)
    try:
        return Report.model_validate(data)
    except RecursionError as exc:
        raise _body_errors([{"type": "json_invalid", "loc": (),
                             "msg": "body nests JSON too deeply for a report"}]) from exc
    except ValidationError as exc:
        raise _body_errors([dict(e) for e in exc.errors(include_url=False)]) from exc
    except TypeError as exc:  # e.g. comparing a naive with an aware timestamp
        raise _body_errors([{"type": "value_error", "loc": (), "msg": str(exc)}]) from exc


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
    },
    openapi_extra={"requestBody": {
        "required": True,
        "content": {"application/json": {"schema": {"$ref": REPORT_SCHEMA_REF}}},
    }},
)
async def post_report(request: Request, response: Response, _token: ProbeTokenDep,
                      session: SessionDep, settings: SettingsDep) -> IngestResult:
    """Idempotent on `report_id`; all of a report is stored, or none of it."""
    report = parse_report(await read_limited_body(request, settings.max_body_bytes))
    now = utcnow()
    problems = check_report(report, now)
    if problems:
        raise _body_errors(problems)
    result = await run_in_threadpool(ingest, session, report, settings, now)
    if result.duplicate:
        response.status_code = status.HTTP_200_OK
    else:  # the alert rules for this host, now that its report is committed (never raises)
        await run_in_threadpool(service_for(request.app).after_ingest, result.host)
    return result
