"""The judged rows' write (app/judging/write.py): rows stored before that changed are
updated in place (PostgreSQL: one UPDATE of the changed columns); a row gone between the
read and the write is written whole again, not lost. On both backends."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import Engine, delete, select
from sqlalchemy.orm import Session

from peerwatch.app.judging.sessions import make_sessionmaker
from peerwatch.app.judging.write import store
from peerwatch.app.queries.health import StoredRows, host_health, stored_rows
from peerwatch.app.records.health import HostHealth
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.db import make_engine
from peerwatch.app.store.tables.inventory import Host
from peerwatch.app.store.tables.judged import JudgedTest
from peerwatch.probes.report import ReportKind
from tests.app.alerting.simhost import SimHost


@pytest.fixture
def engine(settings: Settings) -> Iterator[Engine]:
    engine = make_engine(settings)
    yield engine
    engine.dispose()


def _judged_host(engine: Engine, settings: Settings) -> SimHost:
    host = SimHost(make_sessionmaker(engine), settings)
    for _ in range(2):
        host.step(600, ReportKind.SWEEP)
    return host


def _reasons(session: Session, host_id: int) -> dict[tuple, str]:
    rows = session.execute(select(JudgedTest.src, JudgedTest.dst, JudgedTest.test,
                                  JudgedTest.reason).where(JudgedTest.host_id == host_id))
    return {(src, dst, test): reason for src, dst, test, reason in rows}


def _changed_since_read(s: Session, settings: Settings, hostname: str
                        ) -> tuple[int, HostHealth, dict[tuple, str], StoredRows]:
    """(host id, its health, each test's reason, the stored rows as read with every test's
    reason older): a write that must update every judged test row."""
    host_id = s.scalars(select(Host.id)).one()
    health = host_health(s, settings, hostname)
    previous = stored_rows(s, host_id)
    for row in previous["test"].values():
        row["reason"] = "an older reason"
    return host_id, health, _reasons(s, host_id), previous


def test_changed_rows_are_updated_in_place(engine: Engine, settings: Settings) -> None:
    host = _judged_host(engine, settings)
    with host.sessions() as s:
        host_id, health, want, previous = _changed_since_read(s, settings, host.hostname)
        s.execute(JudgedTest.__table__.update().where(JudgedTest.host_id == host_id)
                  .values(reason="an older reason"))
        store(s, health, previous, host.now())
        s.commit()
        assert want and _reasons(s, host_id) == want


def test_a_row_gone_since_it_was_read_is_written_again(engine: Engine,
                                                         settings: Settings) -> None:
    host = _judged_host(engine, settings)
    with host.sessions() as s:
        host_id, health, want, previous = _changed_since_read(s, settings, host.hostname)
        gone = next(iter(want))
        s.execute(delete(JudgedTest).where(
            JudgedTest.host_id == host_id, JudgedTest.src == gone[0],
            JudgedTest.dst == gone[1], JudgedTest.test == gone[2]))
        store(s, health, previous, host.now())
        s.commit()
        assert _reasons(s, host_id) == want
        stored = s.scalars(select(JudgedTest).where(
            JudgedTest.host_id == host_id, JudgedTest.src == gone[0],
            JudgedTest.dst == gone[1], JudgedTest.test == gone[2])).one()
        judged = next(t for t in health.tests.values()
                      if (t.src, t.dst, t.test.value) == gone)
        assert (stored.verdict, stored.value) == (judged.verdict.value, judged.value)
