"""ETag / If-None-Match on the read API, so a dashboard that polls every 15 s is sent only
what changed: an unchanged answer is a bodiless 304 and the browser reuses its copy.

Pure ASGI middleware: a successful JSON answer to a GET under `/api/v1/` is buffered, given a
weak ETag (a hash of its body) and `Cache-Control: no-cache` (store, but ask every time), and
replaced by 304 when the request's If-None-Match names that tag. The hash leaves out
`"generated_at": "..."` fields: they say when the answer was computed, not what it holds, and
would otherwise make every answer new. Writes, errors and other paths pass untouched.
"""

from __future__ import annotations

import hashlib
import re

from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

API_PREFIX = "/api/v1/"
GENERATED_AT = re.compile(rb'"generated_at":\s*"[^"]*"')


def etag_of(body: bytes) -> str:
    """W/"<hash>" of `body` without its generated_at fields."""
    digest = hashlib.sha256(GENERATED_AT.sub(b"", body)).hexdigest()[:24]
    return f'W/"{digest}"'


def _matches(if_none_match: str, tag: str) -> bool:
    wanted = {t.strip() for t in if_none_match.split(",")}
    return "*" in wanted or tag in wanted or tag.removeprefix("W/") in wanted


class ConditionalGet:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (scope["type"] != "http" or scope["method"] != "GET"
                or not scope["path"].startswith(API_PREFIX)):
            await self.app(scope, receive, send)
            return
        if_none_match = Headers(scope=scope).get("if-none-match", "")
        start: Message | None = None
        chunks: list[bytes] = []

        async def buffered(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                start = message
                if message["status"] != 200 or not _is_json(message):
                    await send(message)
                    start = None  # passed through as it came
                return
            if start is None:
                await send(message)
                return
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                await _finish(send, start, b"".join(chunks), if_none_match)

        await self.app(scope, receive, buffered)


def _is_json(start: Message) -> bool:
    content_type = MutableHeaders(scope=start).get("content-type", "")
    return content_type.startswith("application/json")


async def _finish(send: Send, start: Message, body: bytes, if_none_match: str) -> None:
    tag = etag_of(body)
    headers = MutableHeaders(scope=start)
    headers["ETag"] = tag
    headers.setdefault("Cache-Control", "no-cache")
    if if_none_match and _matches(if_none_match, tag):
        del headers["content-length"]
        if "content-type" in headers:
            del headers["content-type"]
        await send({**start, "status": 304})
        await send({"type": "http.response.body", "body": b""})
        return
    await send(start)
    await send({"type": "http.response.body", "body": body})
