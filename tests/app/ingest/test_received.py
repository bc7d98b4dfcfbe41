"""Reports stored whole, answered, then expanded (app/ingest/received.py, what `serve`'s
ingest workers run), on SQLite and PostgreSQL: a report is in exactly one of the two
tables, a retry is a duplicate wherever its first copy is, the recovery job's expansion from
the stored body stores what the worker's would have, and two expansions store it once."""

from __future__ import annotations

import gzip
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import event, func, select, text, update
from sqlalchemy.orm import Session, sessionmaker

from peerwatch.app.api.report_checks import ReportConflict
from peerwatch.app.ingest.posted import (
    expand_pending,
    expand_stored,
    receive_and_expand,
    receive_posted,
    store_posted,
)
from peerwatch.app.ingest.received import MAX_ATTEMPTS, unexpanded
from peerwatch.app.judging.sessions import make_sessionmaker
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.db import make_engine
from peerwatch.app.store.tables.history import Measurement, ReportRow
from peerwatch.app.store.tables.received import ReceivedReport
from peerwatch.probes.report import Report
from tests.app.factory import sweep
from tests.conftest import SETTLE_S, eventually


@pytest.fixture
def sessions(settings: Settings) -> sessionmaker[Session]:
    return make_sessionmaker(make_engine(settings))


def _now() -> datetime:
    return datetime.now(UTC)


def _report(host: str = "node-a") -> Report:
    return sweep(host, n=3, at=_now() - timedelta(minutes=1))


def _body(report: Report) -> bytes:
    return report.model_dump_json().encode()


def _unexpanded(sessions: sessionmaker[Session], cutoff: datetime) -> list[int]:
    with sessions() as s:
        return unexpanded(s, cutoff)


def _counts(sessions: sessionmaker[Session]) -> tuple[int, int, int]:
    with sessions() as s:
        return (s.scalar(select(func.count()).select_from(ReceivedReport)) or 0,
                s.scalar(select(func.count()).select_from(ReportRow)) or 0,
                s.scalar(select(func.count()).select_from(Measurement)) or 0)


def test_a_report_is_received_whole_then_expanded_into_its_rows(
        sessions: sessionmaker[Session], settings: Settings) -> None:
    report = _report()
    answer, pending = receive_posted(sessions, _body(report), settings, _now(), canonical=True)
    assert pending is not None and not answer.duplicate
    assert (answer.host, answer.measurements) == ("node-a", 6)
    assert _counts(sessions) == (1, 0, 0)  # answered: stored whole, no rows yet

    stored = expand_pending(sessions, settings, pending)
    assert stored is not None and stored.measurements == answer.measurements
    assert _counts(sessions) == (0, 1, 6)
    assert expand_pending(sessions, settings, pending) is None  # taken: stored once


def test_a_retry_is_a_duplicate_while_waiting_and_once_expanded(
        sessions: sessionmaker[Session], settings: Settings) -> None:
    report = _report()
    _, pending = receive_posted(sessions, _body(report), settings, _now(), canonical=True)
    assert pending is not None
    waiting, none = receive_posted(sessions, _body(report), settings, _now(), canonical=True)
    assert waiting.duplicate and none is None
    other = report.model_copy(update={"host": report.host.model_copy(
        update={"hostname": "node-b"})})
    with pytest.raises(ReportConflict):
        receive_posted(sessions, _body(other), settings, _now(), canonical=True)

    expand_pending(sessions, settings, pending)
    again, none = receive_posted(sessions, _body(report), settings, _now(), canonical=True)
    assert again.duplicate and none is None and again.measurements == 6
    with pytest.raises(ReportConflict):
        receive_posted(sessions, _body(other), settings, _now(), canonical=True)
    assert _counts(sessions) == (0, 1, 6)


@pytest.mark.parametrize("encoding", [None, "gzip"])
def test_the_recovery_expands_from_the_stored_body_what_the_worker_would_have(
        sessions: sessionmaker[Session], settings: Settings, tmp_path: object,
        encoding: str | None) -> None:
    report = _report()
    posted = gzip.compress(_body(report)) if encoding else _body(report)
    received = _now()
    _, pending = receive_posted(sessions, posted, settings, received, canonical=True,
                                encoding=encoding)
    assert pending is not None  # ... and the worker that kept it is gone
    assert _unexpanded(sessions, received) == []  # not yet older than the cutoff
    later = received + timedelta(seconds=1)
    assert _unexpanded(sessions, later) == [pending.receipt.received_id]

    assert expand_stored(sessions, settings, pending.receipt.received_id) == "node-a"
    assert expand_stored(sessions, settings, pending.receipt.received_id) is None
    assert expand_pending(sessions, settings, pending) is None
    assert _counts(sessions) == (0, 1, 6)
    with sessions() as s:  # received when it arrived, not when it was recovered
        stored_at = s.scalar(select(ReportRow.received_at))
    assert stored_at is not None and abs((stored_at - received).total_seconds()) < 1e-3


def test_a_body_that_no_longer_expands_is_tried_a_bounded_number_of_times(
        sessions: sessionmaker[Session], settings: Settings) -> None:
    _, pending = receive_posted(sessions, _body(_report()), settings, _now(), canonical=True)
    assert pending is not None
    received_id = pending.receipt.received_id
    with sessions() as s:
        s.execute(update(ReceivedReport).values(body=b"{not json"))
        s.commit()
    later = _now() + timedelta(seconds=1)
    for attempt in range(MAX_ATTEMPTS):
        assert _unexpanded(sessions, later) == [received_id], attempt
        with pytest.raises(Exception, match="JSON|json"):
            expand_stored(sessions, settings, received_id)
    assert _unexpanded(sessions, later) == []  # left for an operator, still stored whole
    assert _counts(sessions) == (1, 0, 0)


def test_a_report_stored_in_process_is_never_received(
        sessions: sessionmaker[Session], settings: Settings) -> None:
    store_posted(sessions, _body(_report()), settings, _now(), canonical=True)
    assert _counts(sessions) == (0, 1, 6)


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)  # SQLite: one writer
def test_a_copy_received_while_the_first_commits_its_rows_is_answered_a_duplicate(
        sessions: sessionmaker[Session], settings: Settings) -> None:
    """Two replicas given one report: the first's expansion deletes its received row and
    stores the report's rows; the second's INSERT, begun before that commit, waits on the
    row being deleted and then finds it gone. It must answer "duplicate" (and keep no row),
    not a second 201 with a second received row whose expansion would find the report
    stored (seen on a loaded machine: 10 of 16 answers 201 for 8 reports posted to two
    replicas)."""
    report = _report()
    _, pending = receive_posted(sessions, _body(report), settings, _now(), canonical=True)
    assert pending is not None
    rows_written, go_on = threading.Event(), threading.Event()

    def paused_before_commit() -> Session:
        session = sessions()
        event.listen(session, "before_commit",
                     lambda _s: (rows_written.set(), go_on.wait(SETTLE_S)))
        return session

    first = threading.Thread(target=expand_pending,
                             args=(paused_before_commit, settings, pending))
    first.start()
    try:
        assert rows_written.wait(SETTLE_S), "the first expansion never reached its commit"
        with ThreadPoolExecutor(1) as pool:
            second = pool.submit(receive_posted, sessions, _body(report), settings, _now(),
                                 None, True)
            assert eventually(lambda: _waiting_on_a_lock(sessions)), \
                "the second copy's INSERT did not wait on the row being deleted"
            go_on.set()
            answer, pending_again = second.result(timeout=SETTLE_S)
    finally:
        go_on.set()
        first.join(SETTLE_S)
    assert answer.duplicate and pending_again is None
    assert _counts(sessions) == (0, 1, 6)


def _waiting_on_a_lock(sessions: sessionmaker[Session]) -> bool:
    with sessions() as s:
        return bool(s.scalar(text(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event_type = 'Lock'")))


def test_serves_fallback_meets_a_copy_another_replica_received(
        sessions: sessionmaker[Session], settings: Settings) -> None:
    """A replica whose ingest workers are still starting stores in its own threads
    (`receive_and_expand`): a report another replica received and has not expanded yet is
    a duplicate there, not a second 201 (stored straight into its rows it was answered new
    by both), and the first replica's expansion still stores it once."""
    report = _report()
    _, pending = receive_posted(sessions, _body(report), settings, _now(), canonical=True)
    assert pending is not None  # replica B: received, its expansion to come
    answer = receive_and_expand(sessions, _body(report), settings, _now(), canonical=True)
    assert answer.duplicate
    assert expand_pending(sessions, settings, pending) is not None
    assert _counts(sessions) == (0, 1, 6)
    other = _report("node-b")  # and a report nobody has: received, expanded, its rows
    stored = receive_and_expand(sessions, _body(other), settings, _now(), canonical=True)
    assert not stored.duplicate and stored.measurements == 6
    assert _counts(sessions) == (0, 2, 12)
