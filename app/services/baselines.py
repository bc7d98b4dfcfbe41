"""Keep each (pair, test)'s baseline current as reports arrive.

A baseline is recomputed at most every `baseline_refresh_s` per (pair, test): the median of
one recent window hardly moves between two sweeps, and reading the window is the costly part
of an ingest. The query reads only the newest `baseline_max_samples` successful, uncontended
samples per key in the window (a window function, on SQLite and PostgreSQL alike).
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.analysis.baseline import healthy_values, robust_baseline
from app.config import Settings
from app.models import Baseline, Measurement
from app.services.fabric_state import HostFabric
from probes.report import TestName

Key = tuple[int, int, str]


def _recent_values(session: Session, host_id: int, tests: set[str], since: datetime,
                   until: datetime, per_key: int) -> dict[Key, list[float]]:
    ranked = (
        select(
            Measurement.src, Measurement.dst, Measurement.test, Measurement.value,
            func.row_number().over(
                partition_by=(Measurement.src, Measurement.dst, Measurement.test),
                order_by=Measurement.measured_at.desc(),
            ).label("rank"),
        )
        .where(
            Measurement.host_id == host_id, Measurement.test.in_(sorted(tests)),
            Measurement.src.is_not(None), Measurement.measured_at >= since,
            Measurement.measured_at <= until, Measurement.error.is_(None),
            Measurement.contended.is_(False),
        )
        .subquery()
    )
    rows = session.execute(
        select(ranked.c.src, ranked.c.dst, ranked.c.test, ranked.c.value)
        .where(ranked.c.rank <= per_key)
    )
    values: dict[Key, list[float]] = defaultdict(list)
    for src, dst, test, value in rows:
        values[(src, dst, test)].append(value)
    return values


def refresh_baselines(session: Session, fabric: HostFabric, keys: set[Key], at: datetime,
                      settings: Settings) -> int:
    """Recompute the due baselines among `keys` as of `at`; returns how many were written."""
    host_id = fabric.host.id
    existing = {
        (b.src, b.dst, b.test): b
        for b in session.scalars(select(Baseline).where(Baseline.host_id == host_id))
    }
    fresh_after = at - timedelta(seconds=settings.baseline_refresh_s)
    due = {k for k in keys if k not in existing or existing[k].updated_at < fresh_after}
    if not due:
        return 0
    since = at - timedelta(seconds=settings.baseline_window_s)
    values = _recent_values(session, host_id, {k[2] for k in due}, since, at,
                            settings.baseline_max_samples)
    written = 0
    for key in sorted(due):
        src, dst, test = key
        expect = fabric.expectation(TestName(test), src, dst)
        kept = healthy_values(TestName(test), values.get(key, []),
                              expect.value if expect else None,
                              settings.degraded_ratio_expected)
        stats = robust_baseline(kept, settings.baseline_min_samples)
        if stats is None:
            continue
        row = existing.get(key)
        if row is None:
            row = Baseline(host_id=host_id, src=src, dst=dst, test=test)
            session.add(row)
        row.value, row.spread, row.n = stats.value, stats.spread, stats.n
        row.window_s, row.updated_at = settings.baseline_window_s, at
        written += 1
    return written
