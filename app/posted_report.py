"""One posted report's body parsed, checked and stored: the one function the ingest route's
worker thread (an in-process app, `app/routes/reports.py`) and an ingest worker process
(`serve`, `app/ingest_pool.py`) both run, so the two can never store a report differently.

The errors it raises are answered the same either way: 400/422 (`HTTPException`) for the
body, `ReportConflict` (409) for a reused report_id, `DatabaseLocked` (503) for SQLite's
"database is locked" past its busy timeout.

A report is known by the SHA-256 of its canonical JSON (what this server's models write for
it), so a retry is a duplicate whatever bytes carry it: a probe upgraded between a send and
its spool's retry writes the same report anew, as other bytes. A body whose sender has this
server's wire models (`X-Peerwatch-Wire` equal to `wire_fingerprint`: every current probe)
is that canonical JSON already, and its digest is its bytes' (the fast path: nothing is
serialized again); any other body (an older or newer probe, a hand-made post) is
serialized once to take it (~3 ms of an 8-GPU sweep).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from datetime import datetime

from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session

from app.config import Settings
from app.errors import body_errors
from app.json_body import inflate
from app.schemas import IngestResult
from app.services.ingest import ingest
from app.services.report_checks import check_report
from app.wire_body import parse_wire
from probes.report import SUPPORTED_SCHEMA_VERSIONS, Report, wire_fingerprint


class DatabaseLocked(Exception):
    """SQLite's "database is locked" past the busy timeout (answered 503)."""


def is_canonical(wire_header: str | None) -> bool:
    """Did the sender write the body with this server's wire models (`X-Peerwatch-Wire`)?"""
    return wire_header == wire_fingerprint()


def parse_report(body: bytes) -> Report:
    """JSON -> schema_version check (400) -> 64-bit check -> wire model (422s)."""
    return parse_wire(body, Report, SUPPORTED_SCHEMA_VERSIONS, "report")


def store_posted(sessions: Callable[[], Session], body: bytes, settings: Settings,
                 now: datetime, sent_at: datetime | None = None,
                 writing: Callable[[], AbstractContextManager[None]] = nullcontext,
                 canonical: bool = False, encoding: str | None = None) -> IngestResult:
    """Parse, check and store the report `body` received at `now` (sent at `sent_at` by the
    probe's clock, when it said); `writing`: held around the transaction (the gate's one
    writer at a time on SQLite); `canonical`: `body` was written by this server's wire
    models (`is_canonical`), so its bytes' digest is the report's; `encoding`: its
    `Content-Encoding` (gzip: inflated here, off the event loop, bounded by the body limit)."""
    body = inflate(body, encoding, settings.max_body_bytes, "report")
    report = parse_report(body)
    problems = check_report(report, now)
    if problems:
        raise body_errors(problems)
    try:
        with writing(), sessions() as session:
            return ingest(session, report, settings, now, sent_at,
                          body if canonical else None)
    except OperationalError as exc:
        if "database is locked" in str(exc):
            raise DatabaseLocked() from exc
        raise
