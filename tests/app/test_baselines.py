"""Baselines: median of the pair's healthy history, recomputed in bounded batches."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.config import Settings
from app.db import make_engine, make_sessionmaker
from app.models import Baseline
from app.services.ingest import ingest
from probes.report import TestName, utcnow
from tests.app.factory import T0, healthy, sweep

TESTS = [TestName.CE_WRITE, TestName.CE_READ]


def _baselines(settings: Settings) -> list[Baseline]:
    engine = make_engine(settings)
    try:
        with Session(engine) as s:
            return list(s.scalars(select(Baseline).order_by(Baseline.src, Baseline.test)))
    finally:
        engine.dispose()


def test_refreshes_come_in_batches_stalest_first(settings: Settings) -> None:
    tuned = settings.model_copy(update={"baseline_refresh_batch": 3, "baseline_refresh_s": 0.0,
                                        "baseline_min_samples": 5})
    engine = make_engine(tuned)
    sessions = make_sessionmaker(engine)
    try:
        stamps = []
        for i in range(7):
            with sessions() as s:
                ingest(s, sweep(n=2, at=T0 + i * timedelta(minutes=10), tests=TESTS), tuned,
                       utcnow())
            stamps.append(sorted(b.updated_at - T0 for b in _baselines(tuned)))
        def sweep_done(k: int) -> timedelta:  # when sweep k finished, from T0
            return timedelta(minutes=10 * k, seconds=5)

        # 4 keys, 5 samples needed: all four appear together, then 3 refreshes per report.
        assert [len(s) for s in stamps] == [0, 0, 0, 0, 4, 4, 4]
        assert stamps[5] == [sweep_done(4)] + [sweep_done(5)] * 3
        assert stamps[6] == [sweep_done(5)] + [sweep_done(6)] * 3
    finally:
        engine.dispose()


def test_baseline_is_the_median_and_ignores_faults_and_contention(settings: Settings) -> None:
    engine = make_engine(settings)
    sessions = make_sessionmaker(engine)
    good = healthy(0, 1, TestName.CE_WRITE) or 0.0
    values = [good, good * 1.01, good * 0.99, good * 0.3, good * 1.02, good]
    try:
        for i, v in enumerate(values):
            with sessions() as s:
                report = sweep(n=2, at=T0 + i * timedelta(minutes=20),
                               value=lambda s_, d, t, v=v: v, contended=[(1, 0)] if i else [])
                ingest(s, report, settings, utcnow())
        rows = _baselines(settings)
        assert [(b.src, b.dst) for b in rows] == [(0, 1)]  # (1, 0) had one uncontended sample
        assert rows[0].n == 5  # the 0.3 x expected sample is a fault, not a normal
        assert rows[0].value == good
    finally:
        engine.dispose()
