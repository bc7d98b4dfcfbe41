"""`Server-Timing: app;dur=<ms>` on every response: the time the app spent on the request.

Measured from the moment the app receives the request until it starts the response, so it
includes waiting for a worker thread or a database connection, but not the network or the
client. Load tests (bench/fleet.py) read the server's own cost from it; browsers show it in
their developer tools. A pure ASGI middleware: no buffering, nothing on the body.
"""

from __future__ import annotations

import time
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send


class ServerTiming:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()

        async def timed_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                ms = (time.perf_counter() - started) * 1000
                headers: list[Any] = list(message.get("headers", []))
                headers.append((b"server-timing", f"app;dur={ms:.1f}".encode()))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, timed_send)
