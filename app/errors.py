"""How failures reach a client: a 4xx naming what was wrong, a 503 the client may retry,
never a bare 500 for something the client or the database's weather caused.

- Validation errors are rendered with every string made JSON-safe: a lone surrogate or NUL
  echoed back from the input would otherwise make the 422 itself fail to render.
- A database that cannot be reached (`OperationalError`: PostgreSQL restarting, SQLite
  locked past its busy timeout) is a 503 with `Retry-After`, which probes retry.
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
import traceback
from typing import Any

from fastapi import FastAPI, Request, status
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DataError, OperationalError, SQLAlchemyError
from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.services.report_checks import ReportConflict

log = logging.getLogger("peerwatch.errors")

RETRY_AFTER_S = 5
SECURITY_HEADERS = {"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY"}


def json_safe(value: Any) -> Any:
    """`value` with every string encodable as UTF-8 (lone surrogates escaped)."""
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, dict):
        return {json_safe(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value


async def _validation_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = json_safe(jsonable_encoder(exc.errors()))
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
    but neither its parameters nor the database's DETAIL line (which quotes the row)."""
    statement = (getattr(exc, "statement", None) or "")[:300]
    frames = "".join(traceback.format_tb(exc.__traceback__))
    log.error("database error during %s %s: %s; statement: %s\n%s", request.method,
              request.url.path, type(getattr(exc, "orig", None) or exc).__name__, statement,
              frames)
    return JSONResponse({"detail": "internal database error (logged on the server)"},
                        status_code=status.HTTP_500_INTERNAL_SERVER_ERROR)


async def _conflict(_request: Request, exc: Exception) -> JSONResponse:
    return JSONResponse({"detail": str(exc)}, status_code=status.HTTP_409_CONFLICT)


class SecurityHeaders:
    """ASGI middleware: nosniff and frame protection on every response (set unless present)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    headers.setdefault(name, value)
            await send(message)

        await self.app(scope, receive, send_with_headers)


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(OperationalError, _database_unavailable)
    app.add_exception_handler(DataError, _data_error)
    app.add_exception_handler(SQLAlchemyError, _database_error)
    app.add_exception_handler(ReportConflict, _conflict)
    app.add_middleware(SecurityHeaders)
