"""The packed running state (app/store/packed.py, migration 0019): every value a state
holds comes back as it went in, and 0019 turns stored JSON states into packed ones and back
without changing one value, on both backends."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import Engine, select, text

from peerwatch.app.analysis.health import Sample
from peerwatch.app.judging.running import Running, epoch_us, sample, sample_us
from peerwatch.app.judging.sessions import make_sessionmaker
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store import packed
from peerwatch.app.store.db import alembic_config, make_engine, upgrade_to_head
from peerwatch.app.store.tables.judged import JudgedTest
from peerwatch.probes.report import ReportKind
from tests.app.alerting.simhost import SimHost
from tests.app.store import migrating

AT = datetime(2026, 11, 30, 8, 0, 0, 123_457, tzinfo=UTC)
BEFORE = "0015"  # the revision 0019 follows


def test_a_state_comes_back_as_it_went_in() -> None:
    state = Running(
        blocks=((397.5e9, 1.25e9, 1_764_489_600), (398.0e9, 0.5e9, 1_764_501_600)),
        part=(396.0e9, 401.5e9),
        judged=(Sample(AT, 396.0e9), Sample(AT + timedelta(minutes=10), 401.5e9)),
        contended=(Sample(AT + timedelta(minutes=20), 120.0e9, True, None, 7_000_000_000),),
        failures=(Sample(AT + timedelta(minutes=30), None, error="cudaErrorPeerAccess: é"),))
    data = state.pack((397.7e9, 1.5e9, 42))
    assert Running.unpack(data) == state
    assert packed.unpack(data)[5] == (397.7e9, 1.5e9, 42)
    assert Running.unpack(Running().pack(None)) == Running()


def test_a_fast_built_sample_is_the_same_sample() -> None:
    """`running.sample` skips the frozen dataclass's __init__: what it builds must compare,
    hash, print and copy as the dataclass's own, and its kept µs must be `at`'s."""
    for fields in ((AT, 396.0e9), (AT, 120.0e9, True, None, 7), (AT, None, False, "lost")):
        fast, plain = sample(*fields), Sample(*fields)
        assert fast == plain and hash(fast) == hash(plain) and repr(fast) == repr(plain)
        assert replace(fast, value=1.0) == replace(plain, value=1.0)
    stored = Running.unpack(Running(judged=(Sample(AT, 1.0),)).pack(None)).judged[0]
    assert stored == Sample(AT, 1.0) and sample_us(stored) == epoch_us(AT)


def test_a_stored_judged_sample_is_the_same_sample() -> None:
    """A judged sample back from a packed state builds its `at` on first use: it compares
    (on either side), hashes, prints and copies as the dataclass's own."""
    plain = Sample(AT, 396.0e9)
    stored = Running.unpack(Running(judged=(plain,)).pack(None)).judged[0]
    assert stored == plain and plain == stored and hash(stored) == hash(plain)
    assert stored != Sample(AT, 1.0) and Sample(AT + timedelta(microseconds=1), 396e9) != stored
    assert repr(stored) == repr(plain) and stored.at == AT and stored.at.tzinfo is UTC
    assert replace(stored, value=1.0) == replace(plain, value=1.0)
    assert len({stored, plain}) == 1


def test_the_window_of_stored_samples_is_bounded_in_time() -> None:
    """`Running.samples` compares stored samples in µs, new ones by their time: the same
    samples as comparing every `at`, a bound one µs apart included."""
    times = [AT + timedelta(minutes=10 * i) for i in range(4)]
    stored = Running.unpack(Running(judged=tuple(Sample(t, 1.0 + i) for i, t in
                                                 enumerate(times[:3]))).pack(None))
    state = stored._replace(judged=(*stored.judged, Sample(times[3], 4.0)))
    for since in (*times, times[1] - timedelta(microseconds=1),
                  times[1] + timedelta(microseconds=1), times[3] + timedelta(seconds=1)):
        assert state.samples(since) == [s for s in state.judged if s.at >= since]


@pytest.mark.parametrize("kept", ["judged", "contended", "failures", "all", "none"])
def test_the_newest_kept_time_is_read_from_the_bytes(kept: str) -> None:
    """`packed.newest_us`: the newest of every kept sample, whichever kind, read without
    unpacking; None for a state that keeps none; the part and blocks before them skipped."""
    judged = tuple(sample(AT + timedelta(minutes=10 * i), 1.0 + i) for i in range(3))
    contended = (sample(AT + timedelta(minutes=35), 2.0, True, None, 10**9),)
    failures = (sample(AT + timedelta(minutes=5), None, False, "copy failed: é"),
                sample(AT + timedelta(minutes=45), None, False, "timed out"))
    chosen = {"judged": (judged, (), ()), "contended": ((), contended, ()),
              "failures": ((), (), failures), "all": (judged, contended, failures),
              "none": ((), (), ())}[kept]
    state = Running(((1.0, 0.1, 1_764_489_600),), (1.0, 2.0), *chosen)
    every = [sample_us(s) for kind in chosen for s in kind]
    assert packed.newest_us(state.pack((1.0, 0.1, 22))) == (max(every) if every else None)


def test_json_and_packed_forms_convert_both_ways() -> None:
    doc = {"b": [[1.5, 0.25, 1_764_489_600]], "p": [2.0, 3.0], "j": [[1_764_489_600_000_001, 2.0]],
           "c": [[1_764_489_600_000_002, 1.0, 5]], "e": [[1_764_489_600_000_003, "lost"]],
           "base": [2.0, 0.5, 22]}
    assert packed.to_doc(packed.from_doc(doc)) == doc
    with pytest.raises(ValueError, match="format 9"):
        packed.unpack(bytes([9]) + packed.from_doc(doc)[1:])


def _migrate(engine: Engine, revision: str, down: bool = False) -> None:
    with engine.connect() as conn:
        (command.downgrade if down else command.upgrade)(alembic_config(conn), revision)
        conn.commit()


@pytest.fixture(params=["sqlite", "postgresql"])
def fresh_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A database of this test's own (it is migrated down and up again)."""
    yield from migrating.fresh_url(request, tmp_path, "peerwatch_0019")


def test_0019_converts_stored_states_down_and_up(fresh_url: str, tmp_path: Path) -> None:
    settings = Settings(database_url=fresh_url, data_dir=tmp_path)
    engine = make_engine(settings)
    try:
        upgrade_to_head(engine)
        host = SimHost(make_sessionmaker(engine), settings)
        for _ in range(3):
            host.step(600, ReportKind.SWEEP)
        with engine.connect() as conn:
            before = {(r.src, r.dst, r.test): bytes(r.state) for r in conn.execute(
                select(JudgedTest.src, JudgedTest.dst, JudgedTest.test, JudgedTest.state))}
        assert before and all(before.values())
        _migrate(engine, BEFORE, down=True)
        with engine.connect() as conn:
            rows = conn.execute(text("SELECT src, dst, test, state FROM judged_tests")).all()
        docs = {(s, d, t): state for s, d, t, state in rows}
        for key, state in docs.items():  # JSON again: a dict on PostgreSQL, text on SQLite
            doc = state if isinstance(state, dict) else json.loads(state)
            assert doc == packed.to_doc(before[key]), key
        _migrate(engine, "head")
        with engine.connect() as conn:
            after = {(r.src, r.dst, r.test): bytes(r.state) for r in conn.execute(
                select(JudgedTest.src, JudgedTest.dst, JudgedTest.test, JudgedTest.state))}
        assert after == before
    finally:
        engine.dispose()
