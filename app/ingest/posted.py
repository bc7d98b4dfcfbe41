"""One posted report's body parsed, checked and stored: the one check the ingest route's
worker thread (an in-process app, `app/routes/reports.py`: `store_posted`, answered once
stored) and an ingest worker process (`serve`, `app/ingest/pool.py`: `receive_posted`,
answered once stored whole, then `expand_pending`) both run, so the two can never check a
report differently, and the same `ingest` stores its rows either way.

The errors it raises are answered the same either way: 400/422 (`HTTPException`) for the
body, `ReportConflict` (409) for a reused report_id, `DatabaseLocked` (503) for SQLite's
"database is locked" past its busy timeout.

A report is known by the SHA-256 of its canonical JSON (what this server's models write for
it), so a retry is a duplicate whatever bytes carry it: a probe upgraded between a send and
its spool's retry writes the same report anew, as other bytes. A body whose sender has this
server's wire models (`X-Peerwatch-Wire` equal to `wire_fingerprint`: every current probe)
is that canonical JSON already, and its digest is its bytes' (the fast path: nothing is
serialized again); any other body (an older or newer probe, a hand-made post) is
serialized once to take it (the slow path).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session

from peerwatch.app.api.errors import body_errors
from peerwatch.app.api.json_body import inflate
from peerwatch.app.api.report_checks import check_report, check_speaker
from peerwatch.app.api.wire_body import parse_wire
from peerwatch.app.ingest.digest import canonical_digest
from peerwatch.app.ingest.received import Receipt, answer_for, count_failed, receive, stored_body
from peerwatch.app.ingest.rows import expand_received, ingest
from peerwatch.app.runtime import heap
from peerwatch.app.runtime.config import Settings
from peerwatch.app.runtime.credentials import Identity
from peerwatch.app.schemas.ingest import IngestResult
from peerwatch.probes.report import SUPPORTED_SCHEMA_VERSIONS, Report, wire_fingerprint


class DatabaseLocked(Exception):
    """SQLite's "database is locked" past the busy timeout (answered 503)."""


def is_canonical(wire_header: str | None) -> bool:
    """Did the sender write the body with this server's wire models (`X-Peerwatch-Wire`)?"""
    return wire_header == wire_fingerprint()


def parse_report(body: bytes) -> Report:
    """JSON -> schema_version check (400) -> 64-bit check -> wire model (422s)."""
    return parse_wire(body, Report, SUPPORTED_SCHEMA_VERSIONS, "report")


def _checked(body: bytes, settings: Settings, now: datetime, encoding: str | None,
             speaker: Identity | None = None) -> tuple[bytes, Report]:
    """The inflated body and its report, checked: what both ways of storing it start from.
    A report about a host `speaker` does not speak for is refused before any other check."""
    body = inflate(body, encoding, settings.max_body_bytes, "report")
    report = parse_report(body)
    check_speaker(report.host.hostname, speaker)
    problems = check_report(report, now)
    if problems:
        raise body_errors(problems)
    return body, report


@dataclass(frozen=True)
class Pending:
    """A report stored whole and answered, kept by the worker that will expand it."""

    receipt: Receipt
    report: Report
    body: bytes | None  # its canonical JSON (its digest is its bytes'), when it is that


def receive_posted(sessions: Callable[[], Session], body: bytes, settings: Settings,
                   now: datetime, sent_at: datetime | None = None, canonical: bool = False,
                   encoding: str | None = None, speaker: Identity | None = None
                   ) -> tuple[IngestResult, Pending | None]:
    """Check the report `body` as `store_posted` does, then store it whole
    (`app/ingest/received.py`): the POST's answer, and what `expand_pending` needs to
    expand it (None for a duplicate: there is nothing to expand)."""
    raw = body
    # the report's objects live on until its expansion: collections in the middle of its
    # parse would only promote them, to be walked again by every later full collection
    with heap.collector_paused():
        body, report = _checked(body, settings, now, encoding, speaker)
        digest = hashlib.sha256(body).hexdigest() if canonical else canonical_digest(report)
        with _locked(), sessions() as session:
            receipt = receive(session, report, digest, raw, encoding, canonical, now,
                              sent_at)
    if isinstance(receipt, IngestResult):
        return receipt, None
    return answer_for(report, duplicate=False), Pending(receipt, report,
                                                        body if canonical else None)


def expand_pending(sessions: Callable[[], Session], settings: Settings, pending: Pending
                   ) -> IngestResult | None:
    """Expand a report this process received into its rows (None: another expansion did)."""
    receipt = pending.receipt
    with _locked(), sessions() as session:
        return expand_received(session, pending.report, settings, receipt.received_id,
                               receipt.received_at, receipt.sent_at, pending.body)


def expand_stored(sessions: Callable[[], Session], settings: Settings, received_id: int
                  ) -> str | None:
    """Expand a received row from its stored body (the recovery job: the worker that
    received it is gone); the report's host, or None when it was expanded meanwhile. A
    failure counts one more attempt on the row and is raised."""
    with sessions() as session:
        stored = stored_body(session, received_id)
    if stored is None:
        return None
    try:
        body, report = _checked(stored.body, settings, stored.received_at, stored.encoding)
        with _locked(), sessions() as session:
            done = expand_received(session, report, settings, received_id,
                                   stored.received_at, stored.sent_at,
                                   body if stored.canonical else None)
    except Exception:
        with sessions() as session:
            count_failed(session, received_id)
        raise
    return None if done is None else done.host


@contextmanager
def _locked() -> Iterator[None]:
    """SQLite's "database is locked" past the busy timeout as `DatabaseLocked` (503)."""
    try:
        yield
    except OperationalError as exc:
        if "database is locked" in str(exc):
            raise DatabaseLocked() from exc
        raise


def store_posted(sessions: Callable[[], Session], body: bytes, settings: Settings,
                 now: datetime, sent_at: datetime | None = None,
                 writing: Callable[[], AbstractContextManager[None]] = nullcontext,
                 canonical: bool = False, encoding: str | None = None,
                 speaker: Identity | None = None) -> IngestResult:
    """Parse, check and store the report `body` received at `now` (sent at `sent_at` by the
    probe's clock, when it said); `writing`: held around the transaction (the gate's one
    writer at a time on SQLite); `canonical`: `body` was written by this server's wire
    models (`is_canonical`), so its bytes' digest is the report's; `encoding`: its
    `Content-Encoding` (gzip: inflated here, off the event loop, bounded by the body limit)."""
    body, report = _checked(body, settings, now, encoding, speaker)
    with _locked(), writing(), sessions() as session:
        return ingest(session, report, settings, now, sent_at, body if canonical else None)


def receive_and_expand(sessions: Callable[[], Session], body: bytes, settings: Settings,
                       now: datetime, sent_at: datetime | None = None,
                       writing: Callable[[], AbstractContextManager[None]] = nullcontext,
                       canonical: bool = False, encoding: str | None = None,
                       speaker: Identity | None = None) -> IngestResult:
    """`serve` before its ingest workers are up: their two steps in one call, answered once
    the rows are stored. Stored straight into its rows (`store_posted`), a report is not
    seen by another replica's receive until it commits, and one posted to both at once was
    answered 201 by both (a replica whose workers were still starting beside one whose
    were up: 5 of 8 reports in a CI run); received whole first, the two meet in
    `received_reports` and one answers "duplicate"."""
    with writing():
        answer, pending = receive_posted(sessions, body, settings, now, sent_at, canonical,
                                         encoding, speaker)
        if pending is None:
            return answer
        done = expand_pending(sessions, settings, pending)
    return answer if done is None else done
