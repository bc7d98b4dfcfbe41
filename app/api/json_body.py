"""One reader for every JSON body the API takes (reports, snapshots, maintenance, silences,
acknowledgements), so the same bad bytes get the same answer on every route.

Refused, each with a 422 of type `json_invalid` naming the reason (and, where the parser
can tell, the field: `loc` ["body", "results", 0, "value"]):
text that is not JSON, bytes that are not UTF-8, the non-finite literals `NaN`,
`Infinity` and `-Infinity` (and numbers too large to be finite, `1e400`), a NUL
character (`\\u0000`) and a lone surrogate (`\\ud800`) anywhere in a string or a key, an
integer longer than Python reads (4300 digits: `int()` raises ValueError), JSON nested
deeper than the parser recurses (and, on the admin routes, deeper than
`ADMIN_BODY_DEPTH`). None of these can be stored or echoed back in JSON, so refusing them at
the door is what keeps every later step (validation, the 422's echo, the database) from
meeting them.

orjson reads the body first: it refuses non-finite numbers, invalid UTF-8 and lone
surrogates itself, so the common case costs one parse and a byte search for `\\u0000`.
What orjson refuses but the standard parser reads (integers past 64 bits, which the
reports route names by field) goes through the standard parser with the same rules.

`StrictJsonRoute` puts this reader in front of FastAPI's own body parsing for routes that
declare a body model (FastAPI would read `NaN` and answer 400 to invalid UTF-8), and bounds
their bodies (`ADMIN_BODY_LIMIT`, 413 while reading: 10,000 silence matchers never reach
validation). The ingest routes bound theirs by PEERWATCH_MAX_BODY_BYTES.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable, Coroutine
from typing import Any, NoReturn

import orjson
from fastapi import HTTPException, status
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response

from peerwatch.app.api.deps import CREDENTIAL_CHECKS, bearer
from peerwatch.app.api.errors import body_errors

NUL_ESCAPE = b"\\u0000"
CLIENT_CLOSED_REQUEST = 499  # nginx's code: nobody is listening for the answer
# The admin API's bodies (a silence of 32 matchers, a window, an ack) fit in a few KiB and
# nest a few levels.
ADMIN_BODY_LIMIT = 64 << 10
ADMIN_BODY_DEPTH = 16


def refuse(reason: str, loc: tuple[Any, ...] = ()) -> NoReturn:
    raise body_errors([{"type": "json_invalid", "loc": loc,
                        "msg": f"body is not valid JSON: {reason}"}])


class _Unreadable:
    """Where the standard parser met a number no field can hold: `NaN`, `Infinity`, a
    number too large to be finite, an integer too long for Python to read (past
    `sys.get_int_max_str_digits()`, 4300 digits: `int()` raises ValueError). Kept in the
    tree so that the refusal can name the field it was sent for."""

    def __init__(self, reason: str) -> None:
        self.reason = reason


def _non_finite(text: str) -> _Unreadable:
    return _Unreadable(f"{text[:40]} is not a finite JSON number (send finite numbers only)")


def _float_or_marker(text: str) -> float | _Unreadable:
    value = float(text)
    return _non_finite(text) if value in (float("inf"), float("-inf")) else value


def _int_or_marker(text: str) -> int | _Unreadable:
    try:
        return int(text)
    except ValueError:  # more digits than Python converts
        return _Unreadable(f"an integer of {len(text.lstrip('-'))} digits is too large "
                           "(no field holds more than 64 bits)")


def _bad_text(text: str) -> str | None:
    if "\x00" in text:
        return "a string holds a NUL character (\\u0000)"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "a string holds a lone surrogate (invalid Unicode)"
    return None


def _problem(node: Any) -> str | None:
    if isinstance(node, str):
        return _bad_text(node)
    if isinstance(node, _Unreadable):
        return node.reason
    return None


def check_values(data: Any) -> None:
    """Refuse a NUL or lone surrogate in any string or key of `data`, or a non-finite
    number, naming where (iterative: a body nested thousands deep cannot overflow here)."""
    stack: list[tuple[Any, tuple[Any, ...]]] = [(data, ())]
    while stack:
        node, loc = stack.pop()
        if reason := _problem(node):
            refuse(reason, loc)
        if isinstance(node, dict):
            for key, value in node.items():
                if reason := _bad_text(key):
                    refuse(f"{reason} in a key", loc)
                stack.append((value, (*loc, key)))
        elif isinstance(node, list):
            stack.extend((value, (*loc, i)) for i, value in enumerate(node))


def _standard_parse(body: bytes, what: str) -> Any:
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        refuse(f"bytes at {exc.start} are not UTF-8")
    try:
        data = json.loads(text, parse_constant=_non_finite, parse_float=_float_or_marker,
                          parse_int=_int_or_marker)
    except json.JSONDecodeError as exc:
        refuse(str(exc))
    except RecursionError as exc:
        raise too_deep(what) from exc
    check_values(data)
    return data


def load_json(body: bytes, what: str) -> Any:
    """The parsed body, or a 422 `json_invalid` naming why it cannot be read."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return _standard_parse(body, what)
    if NUL_ESCAPE in body:
        check_values(data)
    return data


def too_deep(what: str, limit: int | None = None) -> RequestValidationError:
    levels = f" (more than {limit} levels)" if limit else ""
    return body_errors([{"type": "json_invalid", "loc": (),
                         "msg": f"body nests JSON too deeply for a {what}{levels}"}])


def check_depth(data: Any, limit: int, what: str) -> None:
    """422 for a body nested deeper than `limit` (iterative, so any depth orjson reads is
    safe here): validating and echoing such a body recurses once per level, and a few
    hundred levels were a RecursionError (500) in the 422's own echo."""
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node \
            if isinstance(node, list) else ()
        if children and depth > limit:
            raise too_deep(what, limit)
        stack.extend((child, depth + 1) for child in children)


async def read_limited_body(request: Request, limit: int, what: str,
                            setting: str = "PEERWATCH_MAX_BODY_BYTES") -> bytes:
    """The request body, or 413 as soon as it is known to exceed `limit` bytes."""
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise _too_large(what, int(declared), limit, setting)
    chunks, size = [], 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise _too_large(what, size, limit, setting)
            chunks.append(chunk)
    except ClientDisconnect:  # gone, or cut off by the body deadline (app/api/http_guard.py)
        raise HTTPException(CLIENT_CLOSED_REQUEST,
                            detail=f"the client went away before its {what} body arrived"
                            ) from None
    return b"".join(chunks)


def _too_large(what: str, size: int, limit: int, setting: str) -> HTTPException:
    return HTTPException(
        status.HTTP_413_CONTENT_TOO_LARGE,
        detail=f"{what} body of {size} bytes exceeds the limit of {limit} bytes ({setting})",
    )


# Content codings a request body may come in (`Content-Encoding`), beside none: what the
# reports route says in its answers' `Accept-Encoding` (RFC 7694), so a probe compresses
# only for a server that reads it.
REQUEST_ENCODINGS = ("gzip",)
ACCEPT_ENCODING = ", ".join(REQUEST_ENCODINGS)


def plain_encoding(encoding: str | None) -> bool:
    return encoding is None or encoding.strip().lower() in ("", "identity")


def check_encoding(encoding: str | None) -> None:
    """415 naming what is read, before the body is: a coding this server cannot undo."""
    if encoding is not None and not plain_encoding(encoding) \
            and encoding.strip().lower() not in REQUEST_ENCODINGS:
        raise HTTPException(
            status.HTTP_415_UNSUPPORTED_MEDIA_TYPE,
            detail=f"Content-Encoding {encoding[:40]!r} is not read here; send the body "
                   f"plain or as {ACCEPT_ENCODING}", headers={"Accept-Encoding": ACCEPT_ENCODING})


def inflate(body: bytes, encoding: str | None, limit: int, what: str,
            setting: str = "PEERWATCH_MAX_BODY_BYTES") -> bytes:
    """The body as sent before its `Content-Encoding` (gzip, `check_encoding`): 413 as soon
    as it inflates past `limit` bytes (a small body can hold a huge one), 400 when it is
    not whole gzip."""
    if plain_encoding(encoding):
        return body
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)  # gzip's header and trailer
    try:
        plain = inflater.decompress(body, limit + 1)
    except zlib.error as exc:
        raise _not_gzip(what, str(exc)) from None
    if len(plain) > limit:
        raise HTTPException(status.HTTP_413_CONTENT_TOO_LARGE,
                            detail=f"{what} body inflates past the limit of {limit} bytes "
                                   f"({setting})")
    if not inflater.eof or inflater.unused_data:
        raise _not_gzip(what, "it ends early" if not inflater.eof else "bytes follow its end")
    return plain


def _not_gzip(what: str, reason: str) -> HTTPException:
    return HTTPException(status.HTTP_400_BAD_REQUEST,
                         detail=f"{what} body is not whole gzip ({reason})")


def _is_json(request: Request) -> bool:
    kind = request.headers.get("content-type", "application/json").split(";")[0].strip()
    return kind == "application/json" or kind.endswith("+json")


def _credential_check(route: APIRoute) -> Callable[..., Coroutine[Any, Any, Any]] | None:
    """The route's credential dependency (`app/api/deps.py`), if it has one."""
    for dependency in route.dependant.dependencies:
        if dependency.call in CREDENTIAL_CHECKS:
            return dependency.call
    return None


class StrictJsonRoute(APIRoute):
    """A route whose JSON body is read by `load_json` before FastAPI validates it, and only
    once its credential is checked: FastAPI reads a body before it resolves dependencies, so
    a route's credential dependency is also run here first (a 401/403 costs no read)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        if self.body_field is None:
            return handler
        check = _credential_check(self)

        async def read_then_handle(request: Request) -> Response:
            if check is not None:
                await check(request, await bearer(request))
            body = await read_limited_body(request, ADMIN_BODY_LIMIT, "request",
                                           "the admin API's limit")
            request._body = body  # Starlette's cache of body(): FastAPI reads it from there
            if body and _is_json(request):
                data = load_json(body, "request")
                check_depth(data, ADMIN_BODY_DEPTH, "request")
                request._json = data  # Starlette's cache of json()
            return await handler(request)

        return read_then_handle
