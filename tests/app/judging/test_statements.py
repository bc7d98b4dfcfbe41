"""What a judgement costs in SQL, as behaviour: once a host's (pair, test) states are seeded,
a sweep's judgement reads only the new report's results (no history, no baseline query) and
writes each judged table in one statement; a judgement that changed nothing writes nothing
but the host row's `judged_at`. Counted with a SQLAlchemy event hook, on both backends."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from sqlalchemy import Engine, select, update
from sqlalchemy.orm import Session, sessionmaker

from peerwatch.app.judging.load import baseline_from, baseline_values
from peerwatch.app.judging.sessions import make_sessionmaker
from peerwatch.app.queries.common import pair_samples
from peerwatch.app.queries.health import host_health
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.db import make_engine
from peerwatch.app.store.tables.inventory import Host
from peerwatch.app.store.tables.judged import JudgedHost, JudgedTest
from peerwatch.probes.report import ReportKind
from tests.app.alerting.simhost import SimHost
from tests.app.statement_log import statements

WRITE = re.compile(r"^\s*(INSERT INTO|UPDATE|DELETE FROM)\s+(\w+)", re.I)


@pytest.fixture
def engine(settings: Settings) -> Iterator[Engine]:
    engine = make_engine(settings)
    yield engine
    engine.dispose()


def _writes(seen: list[str]) -> list[str]:
    return [m.group(2).lower() for s in seen if (m := WRITE.match(s))]


def _seeded_host(engine: Engine, settings: Settings) -> SimHost:
    host = SimHost(make_sessionmaker(engine), settings)
    for _ in range(3):  # the first judgement seeds every key from history
        host.step(600, ReportKind.SWEEP)
    return host


def test_a_sweep_reads_only_its_new_results_and_writes_each_table_once(
        engine: Engine, settings: Settings) -> None:
    host = _seeded_host(engine, settings)
    host.advance(600)
    host.sweep()
    with statements(engine) as seen:
        host.evaluate()
    reads = [s for s in seen if re.search(r"\bFROM measurements\b", s)]
    assert reads and all("measurements.report_id" in s for s in reads), reads  # by report only
    assert not [s for s in seen if re.search(r"\bbaselines\b", s)]
    writes = _writes(seen)
    judged = [t for t in writes if t.startswith("judged_")]
    assert judged and len(judged) == len(set(judged)), writes  # one statement per table
    assert "judged_tests" in judged  # the sweep's new values and states


def test_a_judgement_that_changed_nothing_writes_only_judged_at(
        engine: Engine, settings: Settings) -> None:
    host = _seeded_host(engine, settings)
    host.advance(30)
    with statements(engine) as seen:
        host.service.evaluate_host(host.hostname, host.now())  # no report since: no change
    assert _writes(seen) == ["judged_hosts"], seen
    assert not [s for s in seen if re.search(r"\bFROM measurements\b", s)]


def test_a_rejudgement_reads_history_and_judges_the_same(
        engine: Engine, settings: Settings) -> None:
    host = _seeded_host(engine, settings)
    sessions: sessionmaker[Session] = host.sessions
    with sessions() as s:
        before = {k: (t.verdict, t.reason) for k, t in
                  host_health(s, settings, host.hostname).tests.items()}
    with statements(engine) as seen:
        host.service.evaluate_host(host.hostname, host.now(), rejudge=True)
    assert [s for s in seen if re.search(r"\bFROM measurements\b", s)]  # seeded from history
    with sessions() as s:
        after = {k: (t.verdict, t.reason) for k, t in
                 host_health(s, settings, host.hostname).tests.items()}
    assert after == before


def test_rows_from_before_the_state_are_seeded_from_history(
        engine: Engine, settings: Settings) -> None:
    """A database migrated past 0013: judged rows without state, a host row without
    `judged_report`; the next sweep's judgement seeds every key from history."""
    host = _seeded_host(engine, settings)
    with host.sessions() as s:
        s.execute(update(JudgedTest).values(state=None))
        top = s.get(JudgedHost, s.scalars(select(Host.id)).one())
        assert top is not None
        top.facts = {k: v for k, v in top.facts.items() if k != "judged_report"}
        s.commit()
    host.advance(600)
    host.sweep()
    with statements(engine) as seen:
        host.evaluate()
    assert [s for s in seen if re.search(r"\bFROM measurements\b", s)
            and "report_id" not in s]  # the history, read once to seed
    with host.sessions() as s:
        assert all(r.state is not None for r in s.scalars(select(JudgedTest)))
    host.advance(600)
    host.sweep()
    with statements(engine) as seen:
        host.evaluate()
    reads = [s for s in seen if re.search(r"\bFROM measurements\b", s)]
    assert reads and all("measurements.report_id" in s for s in reads)  # seeded: new ones only


def _baseline_reads(seen: list[str]) -> list[str]:
    """The per-key baseline read (`load.baseline_values`): a UNION ALL over measurements."""
    return [s for s in seen if "UNION ALL" in s and re.search(r"\bFROM measurements\b", s)]


def test_a_new_hosts_first_judgement_takes_its_baseline_from_the_history_it_read(
        engine: Engine, settings: Settings) -> None:
    """Every key of a new host is seeded; with no measurement older than the look-back
    window, the baseline's rows are all in the history just read: no second read."""
    host = SimHost(make_sessionmaker(engine), settings)
    host.sweep()
    with statements(engine) as seen:
        host.evaluate()
    assert not _baseline_reads(seen)


def test_a_reseed_of_a_host_with_older_history_still_reads_its_baseline(
        engine: Engine, settings: Settings) -> None:
    host = _seeded_host(engine, settings)
    lookback = max(settings.health_lookback_s, 2 * settings.degraded_sustain_s)
    host.advance(lookback)  # the first sweeps are now older than the look-back window
    host.sweep()
    with statements(engine) as seen:
        host.service.evaluate_host(host.hostname, host.now(), rejudge=True)
    assert _baseline_reads(seen)


def test_the_baseline_from_history_equals_the_baseline_read(
        engine: Engine, settings: Settings) -> None:
    host = _seeded_host(engine, settings)
    sessions = make_sessionmaker(engine)
    with sessions() as session:
        host_id = session.scalar(select(Host.id))
        assert host_id is not None
        since, until = host.start, host.now()
        history = pair_samples(session, host_id, since)
        for per_key in (1, 2, 10):
            read = baseline_values(session, host_id, history, since, until, per_key)
            assert read and baseline_from(history, history, since, until, per_key) == read
