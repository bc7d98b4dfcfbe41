"""The limits `GuardedHttp` (app/api/http_guard.py) puts on every connection, and what it
answers past them: the settings gathered, the per-address count, and the refusal itself.

A refusal is one short JSON answer in the API's error shape (`{"detail": ...}`) with
`Connection: close`, written straight to the socket (no request may exist yet to answer,
so it cannot go through the app). Refusals are logged one line per kind and address, then
at most once a `QUIET_S` with how many were not: a client hammering the limits must not
flood the log.
"""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from dataclasses import dataclass
from http import HTTPStatus

from peerwatch.app.runtime.config import Settings

log = logging.getLogger("peerwatch.http")

QUIET_S = 60.0  # one log line per kind of refusal and address at most this often
RETRY_AFTER_S = 5  # what a client refused for its address's connections waits


@dataclass(frozen=True)
class HttpLimits:
    """Per connection: deadlines for a request's head and body, bounds on its head, and how
    many connections one address may hold (0: any number)."""

    header_timeout_s: float
    body_timeout_s: float
    max_header_bytes: int
    max_headers: int
    max_connections_per_address: int

    @classmethod
    def from_settings(cls, settings: Settings) -> HttpLimits:
        return cls(settings.header_timeout_s, settings.body_timeout_s,
                   settings.max_header_bytes, settings.max_headers,
                   settings.max_connections_per_address)


class Refused(Exception):
    """A connection answered `status` and closed, for `reason` (which names the setting)."""

    def __init__(self, status: int, reason: str, retry_after_s: int | None = None) -> None:
        super().__init__(status, reason, retry_after_s)
        self.status = status
        self.reason = reason
        self.retry_after_s = retry_after_s

    def answer(self) -> bytes:
        body = json.dumps({"detail": self.reason}).encode()
        lines = [f"HTTP/1.1 {self.status} {HTTPStatus(self.status).phrase}",
                 "content-type: application/json", f"content-length: {len(body)}",
                 "connection: close"]
        if self.retry_after_s is not None:
            lines.append(f"retry-after: {self.retry_after_s}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


class QuietLog:
    """One line per (reason, address) at once, then at most one a `QUIET_S`, counting the
    refusals it did not log."""

    def __init__(self) -> None:
        self._said: dict[tuple[str, str], float] = {}
        self._unsaid: Counter[tuple[str, str]] = Counter()

    def refused(self, refusal: Refused, address: str) -> None:
        key, now = (refusal.reason, address), time.monotonic()
        if now - self._said.get(key, -QUIET_S) < QUIET_S:
            self._unsaid[key] += 1
            return
        if len(self._said) > 10_000:  # many addresses: a bound, not a history
            self._said.clear()
        self._said[key] = now
        more = self._unsaid.pop(key, 0)
        also = f" (and {more} more since the last line)" if more else ""
        log.warning("%d to %s: %s%s", refusal.status, address, refusal.reason, also)


class PeerCounts:
    """Open connections per client address, against `limit` (0: no limit)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._open: Counter[str] = Counter()

    def admit(self, address: str) -> bool:
        """Count one more connection from `address`; False (not counted) past the limit."""
        if self.limit and self._open[address] >= self.limit:
            return False
        self._open[address] += 1
        return True

    def release(self, address: str) -> None:
        self._open[address] -= 1
        if self._open[address] <= 0:
            del self._open[address]
