"""Migration 0036 with data, on SQLite and PostgreSQL: rows stored before it get one key per
host and (test, pair, GPU set), an empty set stored as NULL or [] alike; each row keeps what
it said, and a downgrade gives it back its host, test, pair and set. On PostgreSQL every
partition with rows is made again in the eight-column layout; the two writers that see a
new key at once keep it once."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, text
from sqlalchemy.orm import Session

from peerwatch.app.runtime.config import Settings
from peerwatch.app.store import partitions
from peerwatch.app.store.db import make_engine
from peerwatch.app.store.measurement_keys import key_ids
from tests.app.conftest import throwaway_pg_database
from tests.app.store.migrating import fresh_url, migrate
from tests.conftest import eventually

LAYOUT = ["report_id", "measured_at", "value", "foreign_bytes", "contended", "error",
          "throttle", "key_id"]
# (report_id, host, test, src, dst, gpus as stored, value, foreign_bytes, error)
OLD_ROWS = [
    (1, "a", "ce_write", 0, 1, None, 40.0, None, None),
    (1, "a", "ce_write", 1, 0, "[]", None, None, "copy failed"),
    (1, "a", "h2d", 0, 0, None, 50.0, 8 << 30, None),
    (1, "a", "allreduce", None, None, "[0, 1, 2]", 300.0, None, None),
    (2, "a", "ce_write", 0, 1, "[]", 41.0, None, None),  # the same key as the first
    (3, "b", "ce_write", 0, 1, None, 39.0, None, None),  # another host's own key
]


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    yield from fresh_url(request, tmp_path)


def _at() -> datetime:
    """Whole seconds on today's UTC day: the partitions the migrations make start today."""
    now = datetime.now(UTC)
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    return max(now - min(timedelta(minutes=30), (now - midnight) / 2),
               midnight).replace(microsecond=0)


def _store_old_rows(engine: Engine, at: datetime) -> None:
    # SQLite's CAST(x AS JSON) is a numeric affinity: its JSON columns hold plain text
    as_json = ":g" if engine.dialect.name == "sqlite" else "CAST(:g AS JSON)"
    with engine.begin() as conn:
        hosts = {name: conn.execute(text(
            "INSERT INTO hosts (name, fabric, first_seen) VALUES (:n, 'x', :at) RETURNING id"),
            {"n": name, "at": at}).scalar() for name in ("a", "b")}
        for report, host, test, src, dst, gpus, value, foreign, error in OLD_ROWS:
            conn.execute(text(
                "INSERT INTO measurements (report_id, host_id, test, src, dst, gpus, value, "
                "contended, foreign_bytes, error, measured_at) VALUES (:r, :h, :t, :s, :d, "
                f"{as_json}, :v, false, :f, :e, :at)"),
                {"r": report, "h": hosts[host], "t": test, "s": src, "d": dst, "g": gpus,
                 "v": value, "f": foreign, "e": error, "at": at})


def _old_shape(engine: Engine) -> list[tuple[Any, ...]]:
    """Every row as 0035 keeps it, an empty set as NULL, a set without spaces."""
    with engine.connect() as conn:
        rows = conn.execute(text(
            "SELECT m.report_id, h.name, m.test, m.src, m.dst, CAST(m.gpus AS TEXT), m.value, "
            "m.foreign_bytes, m.error FROM measurements m JOIN hosts h ON h.id = m.host_id"))
        return sorted(((*r[:5], None if r[5] in (None, "[]") else r[5].replace(" ", ""),
                        *r[6:]) for r in rows), key=repr)


def _new_shape(engine: Engine) -> list[tuple[Any, ...]]:
    with engine.connect() as conn:
        rows = conn.execute(text(
            "SELECT m.report_id, h.name, k.test, k.src, k.dst, k.gpus, m.value, "
            "m.foreign_bytes, m.error FROM measurements m JOIN measurement_keys k ON "
            "k.id = m.key_id JOIN hosts h ON h.id = k.host_id"))
        return sorted(((*r[:5], f"[{r[5]}]" if r[5] else None, *r[6:]) for r in rows),
                      key=repr)


def test_0036_keys_each_row_and_gives_it_back(url: str) -> None:
    engine = make_engine(Settings(database_url=url))
    at = _at()
    try:
        migrate(engine, "0035")
        _store_old_rows(engine, at)
        before = _old_shape(engine)
        assert len(before) == len(OLD_ROWS)
        migrate(engine, "0036")
        assert _new_shape(engine) == before
        with engine.connect() as conn:
            idents = sorted(conn.execute(text(
                "SELECT h.name, k.ident FROM measurement_keys k JOIN hosts h "
                "ON h.id = k.host_id")).all())
        assert idents == [("a", "allreduce:::0,1,2"), ("a", "ce_write:0:1:"),
                          ("a", "ce_write:1:0:"), ("a", "h2d:0:0:"), ("b", "ce_write:0:1:")]
        if url.startswith("postgresql"):
            with engine.connect() as conn:
                today = partitions.partition_name("measurements", at.date())
                assert partitions.column_names(conn, today) == LAYOUT
                assert conn.execute(text(f"SELECT count(*) FROM {today}")).scalar() == 6
        migrate(engine, "0035", down=True)
        assert _old_shape(engine) == before
    finally:
        engine.dispose()


def test_two_writers_seeing_a_new_key_at_once_keep_it_once() -> None:
    """The second writer's insert waits for the first's commit, then turns into nothing,
    and it reads the first one's id."""
    with throwaway_pg_database("peerwatch_keys") as url:
        engine = make_engine(Settings(database_url=url))
        try:
            migrate(engine, "head")
            with engine.begin() as conn:
                host = conn.execute(text("INSERT INTO hosts (name, fabric, first_seen) "
                                         "VALUES ('a', 'x', now()) RETURNING id")).scalar()
            wanted = [("ce_write", 0, 1, ""), ("allreduce", None, None, "0,1")]
            second: dict[str, int] = {}
            with Session(engine) as first:
                ids = key_ids(first, host, wanted)
                other = threading.Thread(target=lambda: second.update(
                    _in_own_session(engine, host, wanted)))
                other.start()
                assert eventually(lambda: _waiting_on_a_lock(engine)), "no second insert waited"
                first.commit()
            other.join(timeout=120)
            assert not other.is_alive()
            assert second == ids and len(ids) == 2
            with engine.connect() as conn:
                assert conn.execute(text("SELECT count(*) FROM measurement_keys")).scalar() == 2
        finally:
            engine.dispose()


def _in_own_session(engine: Engine, host: int, wanted: list[Any]) -> dict[str, int]:
    with Session(engine) as session, session.begin():
        return key_ids(session, host, wanted)


def _waiting_on_a_lock(engine: Engine) -> bool:
    with engine.connect() as conn:
        return bool(conn.execute(text(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event_type = 'Lock'")).scalar())
