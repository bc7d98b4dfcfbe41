"""Baselines: each judged (pair, test) carries its own, the median of its first healthy values,
then a robust running statistic moved by each sweep's new values alone; faults and
contended samples teach it nothing; a re-judgement seeds it from history."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from peerwatch.app.alerting.settings import AlertingSettings
from peerwatch.app.ingest.rows import ingest
from peerwatch.app.judging.running import Running, learn
from peerwatch.app.judging.service import AlertingService
from peerwatch.app.judging.sessions import make_sessionmaker
from peerwatch.app.queries.common import StoredBaseline, judged_baseline
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.db import make_engine
from peerwatch.app.store.tables.inventory import Host
from peerwatch.probes.report import TestName
from tests.app.factory import T0, healthy, sweep


@pytest.fixture
def sessions(settings: Settings) -> sessionmaker[Session]:
    return make_sessionmaker(make_engine(settings))


def _baseline(sessions: sessionmaker[Session], src: int, dst: int) -> StoredBaseline | None:
    with sessions() as s:
        host = s.scalars(select(Host).where(Host.name == "node-a")).one()
        return judged_baseline(s, host.id, (src, dst, TestName.CE_WRITE))


def test_baseline_is_the_median_and_ignores_faults_and_contention(
        sessions: sessionmaker[Session], settings: Settings) -> None:
    service = AlertingService(sessions, settings, AlertingSettings())
    good = healthy(0, 1, TestName.CE_WRITE) or 0.0
    values = [good, good * 1.01, good * 0.99, good * 0.3, good * 1.02, good]
    seen = []
    for i, v in enumerate(values):
        at = T0 + i * timedelta(minutes=20)
        with sessions() as s:
            ingest(s, sweep(n=2, at=at, value=lambda s_, d, t, v=v: v,
                            contended=[(1, 0)] if i else []), settings, at)
        service.evaluate_host("node-a", at + timedelta(seconds=5))
        seen.append(_baseline(sessions, 0, 1))
    assert seen[:5] == [None] * 5  # five healthy values needed; the 0.3 x sample is a fault
    first = seen[5]
    assert first is not None and first.n == 5 and first.value == good
    assert _baseline(sessions, 1, 0) is None  # one uncontended sample only
    service.evaluate_host("node-a", T0 + timedelta(hours=3), rejudge=True)
    again = _baseline(sessions, 0, 1)  # seeded from history: the same median
    assert again is not None and (again.value, again.n) == (good, 5)


def test_one_odd_value_barely_moves_it_a_lasting_change_takes_over() -> None:
    def fed(state: Running, values: list[float]) -> Running:
        for v in values:
            state = learn(state, v, T0, max_samples=200, window_s=7 * 86400)
        return state

    first = fed(Running(), [100.0, 101.0, 99.0, 100.5, 99.5])
    assert first.baseline(5) == (100.0, pytest.approx(0.5 * 1.4826), 5)  # median, scaled MAD
    assert fed(Running(), [100.0] * 4).baseline(5) is None  # fewer than min_samples
    calm = fed(first, [100.0] * 95)  # 100 healthy values: five blocks
    assert fed(calm, [10_000.0]).baseline(5)[0] == 100.0  # type: ignore[index]
    moved = fed(calm, [120.0] * 90)  # the pair is faster now, for good (a driver update)
    assert moved.baseline(5)[0] == 100.0  # type: ignore[index]  # not yet half of what is kept
    moved = fed(moved, [120.0] * 30)
    assert moved.baseline(5)[0] == 120.0  # type: ignore[index]
