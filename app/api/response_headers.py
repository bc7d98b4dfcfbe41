"""Pure ASGI middleware that adds headers to every HTTP response as it starts: no buffering,
nothing on the body. `ServerTiming`, `SecurityHeaders` and `RequestEncodings` are the ones
the app installs."""

from __future__ import annotations

import time
from collections.abc import Callable

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

# Given the response's own headers (its content type), the headers to add.
HeaderSource = Callable[[MutableHeaders], dict[str, str]]


class ResponseHeaders:
    """Subclasses say, per request, which headers its response gets (`for_request`)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    def for_request(self, scope: Scope) -> HeaderSource:
        raise NotImplementedError

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        source = self.for_request(scope)

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in source(headers).items():
                    headers.setdefault(name, value)
            await send(message)

        await self.app(scope, receive, send_with_headers)


class ServerTiming(ResponseHeaders):
    """`Server-Timing: app;dur=<ms>`: the time from receiving the request to starting the
    response, so waiting for a worker thread or a database connection counts, the network
    and the client do not. Load tests (bench/fleet.py) read the server's own cost from it;
    browsers show it in their developer tools."""

    def for_request(self, scope: Scope) -> HeaderSource:
        started = time.perf_counter()
        return lambda _response: {
            "server-timing": f"app;dur={(time.perf_counter() - started) * 1000:.1f}"}


SECURITY_HEADERS = {"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY"}
# Every HTML answer (the dashboard, /docs, an HTML error page) runs scripts from this origin
# only; inline styles are allowed (Plotly and Swagger UI set them), inline scripts are not.
HTML_CSP = "; ".join([
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data: blob:",
    "font-src 'self' data:",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
])


def _security_headers(response: MutableHeaders) -> dict[str, str]:
    if response.get("content-type", "").startswith("text/html"):
        return {**SECURITY_HEADERS, "Content-Security-Policy": HTML_CSP}
    return SECURITY_HEADERS


class SecurityHeaders(ResponseHeaders):
    """nosniff and frame protection on every response, and `HTML_CSP` on every HTML one
    (each set unless the route set its own)."""

    def for_request(self, scope: Scope) -> HeaderSource:
        return _security_headers


def _no_headers(_response: MutableHeaders) -> dict[str, str]:
    return {}


class RequestEncodings(ResponseHeaders):
    """`Accept-Encoding` (RFC 7694) on every answer of the given paths, refusals and errors
    too: the content codings their request bodies may come in. A probe compresses its
    reports only once a server's answer said so (`probes/agent/sender.py`), and goes back to
    plain bodies when one no longer does (a server rolled back to a version without it)."""

    def __init__(self, app: ASGIApp, paths: frozenset[str], accept: str) -> None:
        super().__init__(app)
        self.paths, self.header = paths, {"Accept-Encoding": accept}

    def for_request(self, scope: Scope) -> HeaderSource:
        if scope.get("path", "").rstrip("/") in self.paths:
            return lambda _response: self.header
        return _no_headers
