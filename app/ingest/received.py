"""A report stored whole before it is expanded into rows, so that the POST is answered as
soon as the report is safe, not once its rows are written.

Under `serve` an ingest worker checks a posted report (parse, validation, coherence: every
400/409/422 is still answered to the probe), then `receive` stores its body in
`received_reports` (`app/store/tables/received.py`) in one INSERT and the POST is answered. The
same worker then expands it (`expand`: the report, measurement and sample rows, in one
transaction with the deletion of the received row), and only then is the host judged. A
report is thus always stored whole, in exactly one of the two tables: a worker or server
that stops between the answer and the expansion leaves the received row, and
`unexpanded` finds it for the recovery job, which expands it from its stored body.

Before this the POST waited for the whole store, a sweep's rows' COPY a large part of it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Insert, Table, bindparam, delete, exists, select, update
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from peerwatch.app.api.report_checks import ReportConflict
from peerwatch.app.ingest.duplicate import stored_result
from peerwatch.app.schemas.ingest import IngestResult
from peerwatch.app.store.tables.history import ReportRow
from peerwatch.app.store.tables.received import ReceivedReport
from peerwatch.probes.report import Report

_RECEIVED: Table = ReceivedReport.__table__  # type: ignore[assignment]
_REPORTS: Table = ReportRow.__table__  # type: ignore[assignment]
MAX_ATTEMPTS = 5  # failed expansions of one stored report before the recovery job leaves it


@dataclass(frozen=True)
class Receipt:
    """A report stored whole and answered: what its expansion needs besides the report."""

    received_id: int
    host: str
    digest: str
    received_at: datetime
    sent_at: datetime | None


def answer_for(report: Report, duplicate: bool) -> IngestResult:
    """The POST's answer for `report`: the rows its expansion stores (or stored)."""
    return IngestResult(report_id=report.report_id, host=report.host.hostname,
                        duplicate=duplicate, measurements=len(report.results),
                        counter_samples=sum(len(c.links) for c in report.counters))


def _insert_statement(dialect: str) -> Insert:
    """INSERT the received row unless `reports` holds the report_id already; nothing when
    `received_reports` does (a retry while the first copy waits): one statement, so a
    new report costs one round trip and a commit."""
    columns = [c for c in _RECEIVED.c if c.name != "id"]
    report_id = bindparam("report_id", type_=_RECEIVED.c.report_id.type)
    values = select(*(bindparam(c.name, type_=c.type) for c in columns)).where(
        ~exists().where(_REPORTS.c.report_id == report_id))
    insert = postgresql_insert if dialect == "postgresql" else sqlite_insert
    return (insert(_RECEIVED).from_select([c.name for c in columns], values)
            .on_conflict_do_nothing(index_elements=["report_id"]).returning(_RECEIVED.c.id))


_INSERTS: dict[str, Insert] = {}


def receive(session: Session, report: Report, digest: str, body: bytes,
            encoding: str | None, canonical: bool, now: datetime,
            sent_at: datetime | None) -> Receipt | IngestResult:
    """Store the checked `report` whole (its `body` as posted), committed: its `Receipt`;
    the duplicate's answer when this report_id is stored already (either table), or
    `ReportConflict` when it was stored with other content."""
    dialect = session.get_bind().dialect.name
    statement = _INSERTS.get(dialect)
    if statement is None:
        statement = _INSERTS[dialect] = _insert_statement(dialect)
    host = report.host.hostname
    # one statement, committed by itself: no BEGIN and COMMIT round trips on the answer's path
    autocommit = session.connection(execution_options={"isolation_level": "AUTOCOMMIT"})
    received_id = autocommit.execute(statement, {
        "report_id": report.report_id, "host": host, "digest": digest, "received_at": now,
        "sent_at": sent_at, "canonical": canonical, "encoding": encoding, "body": body,
        "attempts": 0}).scalar()
    if received_id is not None and not (
            dialect == "postgresql" and autocommit.execute(_EXPANDED_MEANWHILE, {
                "received_id": received_id, "report_id": report.report_id}).first()):
        return Receipt(received_id, host, digest, now, sent_at)
    return _stored_before(session, report, digest)


# PostgreSQL: the INSERT's NOT EXISTS reads `reports` as of the statement's start. A copy
# received by another replica, expanded meanwhile, deletes its received row and stores the
# report in one commit; an INSERT begun before that commit waits on the row being deleted,
# then finds it gone and inserts: a second 201 for one report. Read in a snapshot of its own
# (the next statement, after that commit), the report is there: the row goes, and the answer
# is "duplicate". (SQLite has one writer: its INSERT runs wholly before or after the commit.)
_EXPANDED_MEANWHILE = (
    delete(_RECEIVED)
    .where(_RECEIVED.c.id == bindparam("received_id"),
           exists().where(_REPORTS.c.report_id == bindparam(
               "report_id", type_=_RECEIVED.c.report_id.type)))
    .returning(_RECEIVED.c.id))


def _stored_before(session: Session, report: Report, digest: str) -> IngestResult:
    """The answer to a report_id stored before: waiting in `received_reports`, or expanded."""
    waiting = session.scalar(select(_RECEIVED.c.digest)
                             .where(_RECEIVED.c.report_id == report.report_id))
    if waiting is not None:
        if waiting != digest:
            raise ReportConflict(f"report_id {report.report_id} was received before with a "
                                 "different body; a new report needs a new report_id")
        return answer_for(report, duplicate=True)
    stored = stored_result(session, report, digest)
    if stored is None:  # only if retention deleted it meanwhile
        raise RuntimeError(f"report_id {report.report_id} is neither received nor stored")
    return stored


def claim(session: Session, received_id: int) -> bool:
    """Inside the expanding transaction: delete the received row; False when another
    expansion (the recovery job, another replica's) took it first. On PostgreSQL a second
    claimant waits on the row until the first commits, then finds nothing."""
    gone = session.execute(delete(_RECEIVED).where(_RECEIVED.c.id == received_id)
                           .returning(_RECEIVED.c.id)).first()
    return gone is not None


@dataclass(frozen=True)
class StoredBody:
    """A received row as the recovery job expands it."""

    received_id: int
    body: bytes
    encoding: str | None
    canonical: bool
    received_at: datetime
    sent_at: datetime | None


def stored_body(session: Session, received_id: int) -> StoredBody | None:
    row = session.execute(
        select(_RECEIVED.c.body, _RECEIVED.c.encoding, _RECEIVED.c.canonical,
               _RECEIVED.c.received_at, _RECEIVED.c.sent_at)
        .where(_RECEIVED.c.id == received_id)).first()
    return None if row is None else StoredBody(received_id, *row)


def unexpanded(session: Session, older_than: datetime, limit: int = 50) -> list[int]:
    """Received rows left unexpanded since before `older_than` (oldest first), except those
    that failed MAX_ATTEMPTS times: what the recovery job expands."""
    return list(session.scalars(
        select(_RECEIVED.c.id).where(_RECEIVED.c.received_at < older_than,
                                     _RECEIVED.c.attempts < MAX_ATTEMPTS)
        .order_by(_RECEIVED.c.id).limit(limit)))


def count_failed(session: Session, received_id: int) -> None:
    """One more failed expansion of this row (committed on its own)."""
    session.execute(update(_RECEIVED).where(_RECEIVED.c.id == received_id)
                    .values(attempts=_RECEIVED.c.attempts + 1))
    session.commit()
