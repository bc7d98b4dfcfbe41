"""Stored times come back as `datetime.UTC`-aware datetimes on both backends; on PostgreSQL
straight from psycopg, because the session's TimeZone is UTC (`app/store/db.py`): no conversion
per value (a judgement reads ~2,400 of them)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from sqlalchemy import literal, select, text
from sqlalchemy.engine import make_url

from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.base import UtcDateTime
from peerwatch.app.store.db import _utc_session, make_engine


def test_a_stored_time_comes_back_in_utc(settings: Settings) -> None:
    engine = make_engine(settings)
    at = datetime(2026, 12, 3, 14, 0, 0, 123456, tzinfo=timezone(timedelta(hours=2)))
    try:
        with engine.connect() as conn:
            back = conn.scalar(select(literal(at, UtcDateTime())))
            if engine.dialect.name == "postgresql":
                assert conn.scalar(text("SHOW TimeZone")) == "UTC"
    finally:
        engine.dispose()
    assert back == at and back.tzinfo is UTC


def test_the_urls_own_options_are_kept() -> None:
    url = make_url("postgresql+psycopg://u@h/db?options=-c%20statement_timeout%3D5000")
    assert _utc_session(url) == "-c statement_timeout=5000 -c TimeZone=UTC"
    assert _utc_session(make_url("postgresql+psycopg://u@h/db")) == "-c TimeZone=UTC"
