"""`GuardedHttp`: uvicorn's httptools protocol with the bounds it lacks, so slow or oversized
clients can stall neither the server nor its ingest, nor grow its memory.

uvicorn keeps a request's headers in memory however long they grow and waits for them, and
for a body, as long as bytes keep coming: 100 connections each sending 8 MB of one unfinished
header took the server from 135 MB to 942 MB (and it stayed there), and 36 reports sent at
1 byte/s held the ingest gate shut. Per connection (`HttpLimits`, from PEERWATCH_* settings):

- its head (request line and headers) must arrive within `header_timeout_s` of its first
  byte, or of the connection for its first request: 408, closed (a connection that sent no
  byte of a request is closed without an answer: a client reusing it at that instant would
  read the 408 as its own request's);
- its head is at most `max_header_bytes` and `max_headers` fields, counted as the bytes
  arrive, not once they are all in: 431, closed;
- its body must arrive whole within `body_timeout_s` of the head: 408, closed. The route
  reading it sees the client gone (`read_limited_body`: a 499 nobody hears, no traceback), so
  a report whose body never arrives never takes an ingest slot (app/ingest/gate.py);
- one client address holds at most `max_connections_per_address` connections: one more is
  answered 429 with Retry-After at once, and closed.

A refusal is written, the connection half-closed, and whatever the client still sends read
and dropped for up to LINGER_S: closing a socket with unread bytes resets it, and the client
would see the reset instead of the answer. uvicorn's h11 parser bounds a head
(`h11_max_incomplete_event_size`) but answers 400, keeps no deadlines, and parses slower.
"""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

import httptools
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from peerwatch.app.api.http_limits import (
    RETRY_AFTER_S,
    HttpLimits,
    PeerCounts,
    QuietLog,
    Refused,
)

LINGER_S = 2.0  # after a refusal: the client's remaining bytes are read and dropped this long


def guarded_protocol(limits: HttpLimits) -> type[GuardedHttp]:
    """A `GuardedHttp` class for one server (uvicorn's `http=`): its limits, and one count
    of connections per address shared by all of its connections."""
    return type("GuardedHttp", (GuardedHttp,), {
        "limits": limits, "peers": PeerCounts(limits.max_connections_per_address),
        "refusals": QuietLog()})


class GuardedHttp(HttpToolsProtocol):
    limits: ClassVar[HttpLimits]
    peers: ClassVar[PeerCounts]
    refusals: ClassVar[QuietLog]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._address: str | None = None  # counted against its address while open
        self._deadline: asyncio.TimerHandle | None = None
        self._in_head = True  # a request's head has begun (or may begin) and is not complete
        self._started = False  # some byte of the current request has arrived
        self._head_chunks = 0  # bytes of reads that were all head (the parser holds them)
        self._head_parsed = 0  # bytes of the request line and fields parsed so far
        self._fields = 0
        self._refusal: Refused | None = None  # raised inside a parser callback
        self._dropping = False  # refused: what arrives is read and dropped

    # --- the connection

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        address = self.client[0] if self.client else "unknown"
        if not self.peers.admit(address):
            self._refuse(Refused(
                429, f"too many connections from {address}: at most "
                f"{self.peers.limit} at once (PEERWATCH_MAX_CONNECTIONS_PER_ADDRESS)",
                RETRY_AFTER_S))
            return
        self._address = address
        self._arm(self.limits.header_timeout_s, self._head_too_slow)

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel()
        if self._address is not None:
            self.peers.release(self._address)
            self._address = None
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        """uvicorn's, but a refusal raised by a parser callback is answered as such (not as
        uvicorn's 400), and a head still incomplete after a read counts that read."""
        if self._dropping:
            return
        self._unset_keepalive_if_required()
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:  # as uvicorn: served as plain HTTP (ws="none")
            self._unsupported_upgrade_warning()
            return
        except httptools.HttpParserError:
            if self._refusal is not None:
                self._refuse(self._refusal)
                return
            self.logger.warning("Invalid HTTP request received.")
            self.send_400_response("Invalid HTTP request received.")
            return
        if self._in_head and self._started:
            self._head_chunks += len(data)
            if self._head_chunks > self.limits.max_header_bytes:
                self._refuse(self._head_too_large())

    # --- parser callbacks

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._in_head, self._started = True, True
        self._head_chunks = self._head_parsed = self._fields = 0
        if self._deadline is None:  # a later request: its head's clock starts now
            self._arm(self.limits.header_timeout_s, self._head_too_slow)

    def on_url(self, url: bytes) -> None:
        self._parsed(len(url))
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._fields += 1
        if self._fields > self.limits.max_headers:
            self._raise(Refused(431, f"more than {self.limits.max_headers} header fields "
                                     "(PEERWATCH_MAX_HEADERS)"))
        self._parsed(len(name) + len(value) + 4)
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._in_head = self._started = False
        self._cancel()
        super().on_headers_complete()
        self._arm(self.limits.body_timeout_s, self._body_too_slow)

    def on_message_complete(self) -> None:
        self._cancel()
        super().on_message_complete()

    # --- limits

    def _parsed(self, size: int) -> None:
        self._head_parsed += size
        if self._head_parsed > self.limits.max_header_bytes:
            self._raise(self._head_too_large())

    def _head_too_large(self) -> Refused:
        return Refused(431, f"request line and headers larger than "
                            f"{self.limits.max_header_bytes} bytes (PEERWATCH_MAX_HEADER_BYTES)")

    def _raise(self, refusal: Refused) -> None:
        """Stop the parser (it re-raises this from `feed_data`, wrapped) and refuse."""
        self._refusal = refusal
        raise refusal

    def _head_too_slow(self) -> None:
        self._deadline = None
        if not self._started:  # nothing of a request came: close, answer nobody
            self.transport.close()
            return
        self._refuse(Refused(408, f"request headers not received within "
                                  f"{self.limits.header_timeout_s:g} s "
                                  "(PEERWATCH_HEADER_TIMEOUT_S)"))

    def _body_too_slow(self) -> None:
        self._deadline = None
        cycle = self.cycle
        if cycle is None or cycle.response_started:  # answered without its body: not waited for
            self.transport.close()
            return
        cycle.disconnected = True  # the app's receive() says the client left; it answers nobody
        cycle.message_event.set()
        self._refuse(Refused(408, f"request body not received within "
                                  f"{self.limits.body_timeout_s:g} s (PEERWATCH_BODY_TIMEOUT_S)"))

    # --- refusing

    def _refuse(self, refusal: Refused) -> None:
        """Answer `refusal`, half-close, drop what still arrives, close after LINGER_S."""
        self._cancel()
        self._dropping = True
        self.refusals.refused(refusal, self.client[0] if self.client else "unknown")
        if self.transport.is_closing():
            return
        if self.cycle is not None and not (self.cycle.response_complete
                                           or self.cycle.disconnected):
            self.transport.close()  # an earlier request is being answered: no answer fits
            return
        self.transport.write(refusal.answer())
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self.flow.resume_reading()
        self._deadline = self.loop.call_later(LINGER_S, self.transport.close)

    def _arm(self, seconds: float, then: Any) -> None:
        self._cancel()
        self._deadline = self.loop.call_later(seconds, then)

    def _cancel(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
