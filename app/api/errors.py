"""How failures reach a client: a 4xx naming what was wrong, a 503 the client may retry,
never a bare 500 for something the client or the database's weather caused.

- Validation errors are rendered with every value made JSON-safe: a lone surrogate, a NaN or
  bytes echoed back from the input would otherwise make the 422 itself fail to render.
- A database that cannot be reached (`OperationalError`: PostgreSQL restarting or shutting
  down, a connection refused or cut; `InterfaceError` and any error that invalidated its
  connection: a connection found closed; SQLite locked past its busy timeout) is a 503 with
  `Retry-After`, which probes retry. An ingest worker process sends it back as
  `DatabaseUnavailable` (app/ingest/pool.py), answered the same.
- A value the database refuses (`DataError`) is a 422: the wire schema bounds every value by
  its column, so this is a safety net, not a path.
- A report_id reused for a different report is a 409.

- Any other database error is a 500 whose log has the statement and the stack, but neither
  SQL parameters nor the database's DETAIL (PostgreSQL quotes the failing row there).

The logs name the failure's class and the route, never SQL parameters or request bodies.
Every response also carries `X-Content-Type-Options: nosniff` and `X-Frame-Options: DENY`.
"""

from __future__ import annotations

import logging
import math
import traceback
from typing import Any

from fastapi import FastAPI, Request, status
from fastapi.encoders import jsonable_encoder
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import iter_route_contexts
from sqlalchemy.exc import (
    DataError,
    DBAPIError,
    InterfaceError,
    OperationalError,
    SQLAlchemyError,
)
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response
from starlette.routing import compile_path

from peerwatch.app.api.report_checks import ForeignHost, ReportConflict
from peerwatch.app.api.response_headers import SecurityHeaders

log = logging.getLogger("peerwatch.errors")

RETRY_AFTER_S = 5
# How deep an error's echoed input goes: a body nested hundreds deep would otherwise make
# the 422's echo recurse past Python's limit (a 500 for the client's mistake).
ECHO_DEPTH = 8
ECHO_CHARS = 200  # of a string input a body error echoes (pydantic echoes a whole bad body)


class DatabaseUnavailable(Exception):
    """The database could not be reached for a moment (503 with Retry-After): what an
    ingest worker process raises in place of the driver's error, which names the server
    and need not cross a process boundary."""


def database_unavailable(exc: BaseException) -> bool:
    """Is `exc` the database's weather (retry later) rather than a fault of the request?"""
    return isinstance(exc, OperationalError | InterfaceError | DatabaseUnavailable) or (
        isinstance(exc, DBAPIError) and exc.connection_invalidated)


def unprocessable(field: str, message: str) -> RequestValidationError:
    """A 422 in FastAPI's own shape (a list naming the body field), as the API documents
    for every 422: for checks a route makes after the body parsed."""
    return RequestValidationError([{"type": "value_error", "loc": ("body", field),
                                    "msg": message, "input": None}])


def query_unprocessable(message: str, name: str | None = None) -> RequestValidationError:
    """A 422 in the documented shape for a check on the query a route makes itself (a
    range that ends before it starts): a list naming the query, never a bare string."""
    loc = ("query", name) if name else ("query",)
    return RequestValidationError([{"type": "value_error", "loc": loc, "msg": message,
                                    "input": None}])


def _finite(value: Any) -> Any:
    """NaN and infinities cannot be sent back in JSON: echo them as text."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def body_errors(errors: list[dict[str, Any]]) -> RequestValidationError:
    """FastAPI's 422 shape for a body a route parsed itself (reports, snapshots): each `loc`
    starting with "body"; big inputs are not echoed."""
    cleaned = []
    for e in errors:
        item = {k: v for k, v in e.items() if k not in ("url", "ctx", "input")}
        value = e.get("input")
        if isinstance(value, str | bytes) and len(value) > ECHO_CHARS:
            item["input"] = f"{value[:ECHO_CHARS]!r}... ({len(value)} long)"
        elif not isinstance(value, dict | list):
            item["input"] = _finite(value)
        item["loc"] = ("body", *e["loc"])
        cleaned.append(item)
    return RequestValidationError(cleaned)


def json_safe(value: Any, depth: int = 0) -> Any:
    """`value` as plain JSON that always encodes: strings UTF-8-safe (lone surrogates
    escaped), non-finite floats as text, anything else that is not a JSON type as its repr,
    nothing deeper than `ECHO_DEPTH` (cut off as "...")."""
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, dict | list | tuple) and depth >= ECHO_DEPTH:
        return "..."
    if isinstance(value, dict):
        return {str(json_safe(k)): json_safe(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v, depth + 1) for v in value]
    if isinstance(value, float):
        return _finite(value)
    if value is None or isinstance(value, bool | int):
        return value
    return json_safe(repr(value)[:200])


def _echo(error: Any) -> Any:
    """One validation error made JSON-safe; if FastAPI's encoder cannot take it (bytes that
    are not UTF-8, an exotic input), the safe form of the raw error instead."""
    try:
        return json_safe(jsonable_encoder(error))
    except (TypeError, ValueError, RecursionError):
        return json_safe(error)


async def _validation_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = [_echo(e) for e in exc.errors()]
    return JSONResponse({"detail": errors}, status_code=status.HTTP_422_UNPROCESSABLE_CONTENT)


async def _database_unavailable(request: Request, exc: Exception) -> JSONResponse:
    orig = getattr(exc, "orig", None)
    log.warning("database unavailable during %s %s: %s", request.method, request.url.path,
                type(orig or exc).__name__)
    return JSONResponse(
        {"detail": "the database is unavailable for a moment; retry later"},
        status_code=status.HTTP_503_SERVICE_UNAVAILABLE,
        headers={"Retry-After": str(RETRY_AFTER_S)})


async def _data_error(request: Request, exc: Exception) -> JSONResponse:
    orig = getattr(exc, "orig", None)
    message = str(orig or exc).splitlines()[0] if str(orig or exc) else type(exc).__name__
    log.warning("database refused a value during %s %s: %s", request.method,
                request.url.path, message)
    error = {"type": "value_error", "loc": [],
             "msg": f"a value does not fit the database: {json_safe(message)}"}
    return JSONResponse({"detail": [error]}, status_code=status.HTTP_422_UNPROCESSABLE_CONTENT)


async def _database_error(request: Request, exc: Exception) -> JSONResponse:
    """Any other database error: a 500 whose log names the statement and where it failed,
    but neither its parameters nor the database's DETAIL line (which quotes the row); one
    that cut its connection is the database's weather: 503."""
    if database_unavailable(exc):
        return await _database_unavailable(request, exc)
    statement = (getattr(exc, "statement", None) or "")[:300]
    frames = "".join(traceback.format_tb(exc.__traceback__))
    log.error("database error during %s %s: %s; statement: %s\n%s", request.method,
              request.url.path, type(getattr(exc, "orig", None) or exc).__name__, statement,
              frames)
    return JSONResponse({"detail": "internal database error (logged on the server)"},
                        status_code=status.HTTP_500_INTERNAL_SERVER_ERROR)


async def _conflict(_request: Request, exc: Exception) -> JSONResponse:
    return JSONResponse({"detail": str(exc)}, status_code=status.HTTP_409_CONFLICT)


async def _foreign_host(_request: Request, exc: Exception) -> JSONResponse:
    return JSONResponse({"detail": str(exc)}, status_code=status.HTTP_403_FORBIDDEN)


def allowed_methods(request: Request) -> list[str]:
    """Every method some route serves at this path (Starlette's 405 names only the first
    matching route's: `Allow: POST` on a path that also serves GET)."""
    methods: set[str] = set()
    for route in iter_route_contexts(request.app.routes):
        if route.methods and route.path and compile_path(route.path)[0].match(request.url.path):
            methods |= set(route.methods)
    return sorted(methods)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    if exc.status_code == status.HTTP_405_METHOD_NOT_ALLOWED:
        allow = ", ".join(allowed_methods(request))
        return JSONResponse({"detail": f"method {request.method} not allowed here; "
                             f"allowed: {allow}"}, status_code=405, headers={"Allow": allow})
    return await http_exception_handler(request, exc)


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(OperationalError, _database_unavailable)
    app.add_exception_handler(InterfaceError, _database_unavailable)
    app.add_exception_handler(DatabaseUnavailable, _database_unavailable)
    app.add_exception_handler(DataError, _data_error)
    app.add_exception_handler(SQLAlchemyError, _database_error)
    app.add_exception_handler(ReportConflict, _conflict)
    app.add_exception_handler(ForeignHost, _foreign_host)
    app.add_middleware(SecurityHeaders)
