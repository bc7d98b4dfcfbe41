"""POST reports to the server and classify each answer into what the probe must do next.

    2xx                           DELIVERED     the server has it (a replayed duplicate too:
                                                ingest is idempotent on report_id)
    5xx, 408, 429, timeout,
    connection refused/reset      RETRY         spool it, try again later with backoff, never
                                                before the answer's Retry-After (jittered:
                                                an overloaded server is not hit in lockstep)
    401, 403                      UNAUTHORIZED  the token is wrong: log loudly, spool it, and
                                                retry only at the slowest backoff
    404, 405                      UNAUTHORIZED  (same: the URL is wrong, not the report)
    other 4xx (400, 413, 422 ...) REJECTED      this report will never be accepted: set it
                                                aside (kept on disk, counted), never retried

The classification is the whole point of this module: "retry forever" is right for an
absent server and wrong for a bad token or a bad report.

Bodies go gzip-compressed (level 1: cheap, and a sweep's body 10x smaller; an
inventory report 18x) once the server's answers say it reads them (`Accept-Encoding: gzip`
on an answer, RFC 7694; every answer of a current server's reports route carries it). A
server that refuses at the door answers only once the whole body has reached it (HTTP/1.1:
the client sends the body before it reads), so the body's size is in every refusal's time
and in the server's event loop's share of receiving it. An answer without that header turns
compression off again, and a 4xx to a compressed body that does not carry it (a server
rolled back to a version that cannot read gzip: its 422) is sent again plain at once, so
no report is set aside for having been compressed. Job snapshots
(`probes/agent/snapshot_outbox.py`) go through the same Sender to `SNAPSHOTS_PATH`.
"""

from __future__ import annotations

import email.utils
import gzip
import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum

import httpx
from pydantic import BaseModel

from peerwatch.probes.agent.clock_offset import OFFSET_HEADER, offset_sample
from peerwatch.probes.heartbeat import HEARTBEATS_PATH, Heartbeat
from peerwatch.probes.report import Report, wire_fingerprint

REPORTS_PATH = "/api/v1/reports"
SNAPSHOTS_PATH = "/api/v1/snapshots"
_MESSAGE_LIMIT = 500
_RETRY_STATUS = frozenset({408, 425, 429})
_CONFIG_STATUS = frozenset({401, 403, 404, 405})
RETRY_AFTER_JITTER = 0.5  # a Retry-After of T is honoured as a wait in [T, 1.5 T]
HOST_HEADER = "X-Peerwatch-Host"  # the report's host, readable before the body
SENT_AT_HEADER = "X-Peerwatch-Sent-At"  # this attempt's send time (ISO 8601, the probe's clock)
WIRE_HEADER = "X-Peerwatch-Wire"  # the wire models that wrote a report's body (wire_fingerprint)
GZIP_LEVEL = 1  # zlib's fastest: 9.9x on a sweep's JSON where level 6 gives 11.6x at 3x the CPU


def reads_gzip(response: httpx.Response) -> bool:
    """Does this answer say its server reads gzip request bodies (RFC 7694)?"""
    accepted = response.headers.get("accept-encoding", "")
    return "gzip" in (part.split(";")[0].strip().lower() for part in accepted.split(","))


class Outcome(StrEnum):
    DELIVERED = "delivered"
    RETRY = "retry"
    UNAUTHORIZED = "unauthorized"
    REJECTED = "rejected"


@dataclass(frozen=True)
class SendResult:
    outcome: Outcome
    status: int | None  # HTTP status; None when no answer came (timeout, refused)
    message: str  # the server's own words, or the transport error
    retry_after_s: float | None = None

    def describe(self) -> str:
        where = f"HTTP {self.status}" if self.status is not None else "no answer"
        return f"{where}: {self.message}" if self.message else where


def classify(status: int) -> Outcome:
    if 200 <= status < 300:
        return Outcome.DELIVERED
    if status >= 500 or status in _RETRY_STATUS:
        return Outcome.RETRY
    if status in _CONFIG_STATUS:
        return Outcome.UNAUTHORIZED
    return Outcome.REJECTED


def server_message(response: httpx.Response) -> str:
    """The server's explanation: FastAPI's `detail` where present, else the body's start."""
    try:
        body = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return response.text[:_MESSAGE_LIMIT].strip()
    detail = body.get("detail", body) if isinstance(body, dict) else body
    if isinstance(detail, list):  # pydantic validation errors: loc + msg of each
        parts = [f"{'.'.join(map(str, d.get('loc', [])))}: {d.get('msg')}"
                 if isinstance(d, dict) else str(d) for d in detail]
        detail = "; ".join(parts)
    text = detail if isinstance(detail, str) else json.dumps(detail)
    return text[:_MESSAGE_LIMIT]


def _retry_after(response: httpx.Response) -> float | None:
    """Retry-After in seconds: delta-seconds or an HTTP date (RFC 9110); None if absent."""
    value = response.headers.get("retry-after", "").strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def request_headers(report: BaseModel, wall: Callable[[], datetime],
                    offset_s: float | None = None) -> dict[str, str]:
    """What the server reads before the body: whose report this is (so a refusal, answered
    before the body is read, is counted for its host), when this attempt was sent by the
    clock the report was stamped with (clock skew from one request's transit, never from
    the time a report spent in the spool), once an answer has shown it, this clock's
    offset from the server's as the probe measured it (`clock_offset.py`), and for a report,
    which wire models wrote its body (`wire_fingerprint`: a server with the same ones knows
    the report by its bytes; any other serializes it once to know it by its content)."""
    headers = {SENT_AT_HEADER: wall().isoformat()}
    if offset_s is not None:
        headers[OFFSET_HEADER] = f"{offset_s:.3f}"
    if isinstance(report, Report):
        headers[WIRE_HEADER] = wire_fingerprint()
    identity = getattr(report, "host", None)
    hostname = identity if isinstance(identity, str) else getattr(identity, "hostname", None)
    if isinstance(hostname, str):
        headers[HOST_HEADER] = hostname
    return headers


class Sender:
    """An httpx client bound to one server and token. `transport` lets tests supply one;
    `wall` is the clock the probe stamps its reports with (the send time is stamped by it)."""

    def __init__(self, server_url: str, token: str, timeout_s: float,
                 transport: httpx.BaseTransport | None = None, path: str = REPORTS_PATH,
                 wall: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json",
                   "User-Agent": "peerwatch-probe"}
        self.url = server_url.rstrip("/") + path
        self.heartbeat_url = server_url.rstrip("/") + HEARTBEATS_PATH
        self._wall = wall
        self.offset_s: float | None = None  # the newest measured offset (clock_offset.py)
        self.gzip = False  # the newest answer said the server reads gzip bodies
        self._client = httpx.Client(headers=headers, timeout=timeout_s, transport=transport)

    def send(self, report: BaseModel) -> SendResult:
        """POST one report (or snapshot) and classify the answer."""
        body = report.model_dump_json().encode()
        try:
            try:
                response = self._post(report, body)
            except (httpx.RemoteProtocolError, httpx.ReadError):
                # A kept-alive connection the server had just closed: one immediate retry on
                # a fresh one is safe, since ingest is idempotent on report_id.
                response = self._post(report, body)
        except httpx.TransportError as exc:  # refused, reset, DNS, timeout ...
            return SendResult(Outcome.RETRY, None, f"{type(exc).__name__}: {exc}".strip(": "))
        outcome = classify(response.status_code)
        message = "" if outcome is Outcome.DELIVERED else server_message(response)
        return SendResult(outcome, response.status_code, message, _retry_after(response))

    def beat(self, heartbeat: Heartbeat) -> SendResult:
        """POST one heartbeat (plain: it is a few hundred bytes) and classify the answer;
        its `Date` updates the clock offset, but it says nothing of gzip (another route)."""
        headers = request_headers(heartbeat, self._wall, self.offset_s)
        sent = self._wall()
        try:
            response = self._client.post(self.heartbeat_url,
                                         content=heartbeat.model_dump_json().encode(),
                                         headers=headers)
        except httpx.TransportError as exc:
            return SendResult(Outcome.RETRY, None, f"{type(exc).__name__}: {exc}".strip(": "))
        sample = offset_sample(sent, self._wall(), response.headers.get("date"))
        if sample is not None:
            self.offset_s = sample
        outcome = classify(response.status_code)
        message = "" if outcome is Outcome.DELIVERED else server_message(response)
        return SendResult(outcome, response.status_code, message, _retry_after(response))

    def _post(self, report: BaseModel, body: bytes) -> httpx.Response:
        """One attempt (compressed when the server said it reads gzip, and sent again plain
        when a compressed one was refused by a server that no longer says so); its answer's
        `Date` updates the measured clock offset."""
        compressed = self.gzip
        response = self._post_once(report, body, compressed)
        if compressed and not self.gzip and 400 <= response.status_code < 500 \
                and response.status_code not in _RETRY_STATUS:
            response = self._post_once(report, body, compressed=False)
        return response

    def _post_once(self, report: BaseModel, body: bytes, compressed: bool) -> httpx.Response:
        headers = request_headers(report, self._wall, self.offset_s)
        if compressed:
            body = gzip.compress(body, GZIP_LEVEL, mtime=0)
            headers["Content-Encoding"] = "gzip"
        sent = self._wall()
        response = self._client.post(self.url, content=body, headers=headers)
        sample = offset_sample(sent, self._wall(), response.headers.get("date"))
        if sample is not None:
            self.offset_s = sample
        self.gzip = reads_gzip(response)
        return response

    def close(self) -> None:
        self._client.close()


class Backoff:
    """Exponential backoff with jitter, capped: initial, 2x, 4x ... up to `max_s`.

    Each delay is drawn from [d/2, d] ("equal jitter") so a fleet whose server came back
    does not return in lockstep, yet no probe waits less than half its step.
    """

    def __init__(self, initial_s: float, max_s: float, rng: random.Random | None = None) -> None:
        self.initial_s = initial_s
        self.max_s = max_s
        self.failures = 0
        self._rng = rng or random.Random()

    def step(self) -> float:
        """The nominal (un-jittered) delay after the current number of failures."""
        if self.failures == 0:
            return 0.0
        return min(self.max_s, self.initial_s * 2 ** min(self.failures - 1, 62))

    def failure(self, at_least_s: float = 0.0) -> float:
        """Record a failure; the delay before the next attempt.

        `at_least_s` is the server's Retry-After: never sooner than that, and spread over up
        to RETRY_AFTER_JITTER more of it, so a fleet told "5 s" at the same moment does not
        come back in the same instant. The cap `max_s` gives way to a longer Retry-After."""
        self.failures += 1
        nominal = self.step()
        delay = min(self.max_s, self._rng.uniform(nominal / 2, nominal))
        if at_least_s > 0:
            delay = max(delay, at_least_s * self._rng.uniform(1.0, 1.0 + RETRY_AFTER_JITTER))
        return delay

    def give_up_for_now(self) -> float:
        """A failure a retry soon will not fix (a bad token): wait the longest step."""
        self.failures = max(self.failures + 1, 64)
        return self.max_s

    def success(self) -> None:
        self.failures = 0
