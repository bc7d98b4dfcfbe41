"""A probe is heard when its request arrives, before any wait: a report that takes longer
than the staleness limit to be stored, or that its probe gave up on, leaves the probe heard,
not silent (app/ingest/heard.py, migration 0020)."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select, text

from peerwatch.app.ingest.heard import HeardBook
from peerwatch.app.ingest.rows import ingest
from peerwatch.app.judging.sessions import make_sessionmaker
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.db import make_engine
from peerwatch.app.store.tables.inventory import Host
from peerwatch.probes.agent.sender import HOST_HEADER
from tests.app.factory import sweep
from tests.app.ingest.test_refusals import (  # noqa: F401 - held: a fixture
    HEADERS,
    LIMIT_S,
    _until,
    assert_heard_then_stale,
    held,
)
from tests.probes.live_server import live_server, server_settings


def _heard_at(settings: Settings, host: str) -> datetime | None:
    engine = make_engine(settings)
    try:
        with make_sessionmaker(engine)() as session:
            return session.scalar(select(Host.last_heard_at).where(Host.name == host))
    finally:
        engine.dispose()


def test_a_report_still_waiting_to_be_stored_has_its_probe_heard(
        tmp_path: Path, held: threading.Event) -> None:  # noqa: F811
    settings = server_settings(tmp_path)
    with live_server(settings) as server:
        base = server.url
        engine = make_engine(settings)  # node-a is known: stored once, straight into the db
        with make_sessionmaker(engine)() as session:
            ingest(session, sweep(n=2, at=datetime.now(UTC) - timedelta(minutes=5)), settings,
                   datetime.now(UTC) - timedelta(minutes=5))
        engine.dispose()
        sent = datetime.now(UTC)
        waiting = threading.Thread(target=lambda: httpx.post(
            f"{base}/api/v1/reports", content=sweep(n=2, at=sent).model_dump_json(),
            headers={**HEADERS, HOST_HEADER: "node-a"}, timeout=LIMIT_S))
        waiting.start()
        try:
            assert held.entered.wait(LIMIT_S)  # type: ignore[attr-defined]
            heard = _until(lambda: _heard_at(settings, "node-a"),
                           "the waiting report's arrival written")
            assert heard.replace(tzinfo=UTC) >= sent - timedelta(seconds=1)
        finally:
            held.set()
            waiting.join(LIMIT_S)


def test_a_probe_heard_within_the_limit_is_not_stale_however_old_its_stored_report(
        settings: Settings) -> None:
    engine = make_engine(settings)
    sessions = make_sessionmaker(engine)
    try:
        now = datetime.now(UTC)
        with sessions() as session:
            ingest(session, sweep(n=2, at=now - timedelta(hours=1)), settings,
                   now - timedelta(hours=1))
        book = HeardBook()
        book.heard("node-a", now - timedelta(seconds=5))  # its report is still being stored
        assert book.flush(sessions) == 1
        assert_heard_then_stale(sessions, settings, now)
    finally:
        engine.dispose()


def test_a_stored_report_takes_back_its_arrival_but_not_a_refusal() -> None:
    at = datetime.now(UTC)
    book = HeardBook()
    book.heard("node-a", at)
    book.stored("node-a", at)  # its receipt says the same: nothing left to write
    book.heard("node-b", at)
    book.note("node-b", at)
    book.stored("node-b", at)  # the refusal still counts
    book.heard("node-c", at + timedelta(seconds=3))
    book.stored("node-c", at)  # a newer arrival than the stored one is kept
    assert sorted(book._take()) == ["node-b", "node-c"]


def test_a_flush_skips_a_host_an_ingest_holds_and_writes_it_next_time(
        settings: Settings) -> None:
    if not settings.database_url.startswith("postgresql"):
        return  # SQLite has one writer and no row locks: nothing to skip
    engine = make_engine(settings)
    sessions = make_sessionmaker(engine)
    try:
        now = datetime.now(UTC)
        with sessions() as session:
            for host in ("node-a", "node-b"):
                ingest(session, sweep(n=2, host=host, at=now), settings, now)
        book = HeardBook()
        for host in ("node-a", "node-b"):
            book.heard(host, now + timedelta(seconds=1))
        with engine.connect() as ingesting:  # an ingest of node-a holds its row
            ingesting.execute(text("SELECT id FROM hosts WHERE name = 'node-a' "
                                   "FOR NO KEY UPDATE"))
            done: list[int] = []
            flusher = threading.Thread(target=lambda: done.append(book.flush(sessions)))
            flusher.start()
            flusher.join(LIMIT_S)
            assert done == [1]  # node-b written; node-a skipped without waiting
            ingesting.rollback()
        assert book.flush(sessions) == 1
        assert _heard_at(settings, "node-a") is not None
    finally:
        engine.dispose()


@pytest.mark.parametrize("name", ["", "not a host!", None])
def test_a_header_that_names_no_valid_host_notes_nothing(name: str | None) -> None:
    book = HeardBook()
    book.heard(name, datetime.now(UTC))
    assert book._take() == {}
