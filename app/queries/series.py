"""Time series of one (pair, test): min/mean/max per time bucket, computed in SQL.

Up to `series_raw_max_s` of range reads raw measurements; longer ranges read the hourly
rollups (a year of them), topped up from raw samples for the hours the rollup job has not
reached yet, so the newest hour is never missing. Only successful, uncontended samples form
the buckets; contended samples and failures are listed beside them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, and_, false, func, select
from sqlalchemy.orm import Session

from peerwatch.app.queries.common import NotFound, get_host, judged_baseline
from peerwatch.app.queries.fabric import load_fabric
from peerwatch.app.queries.jobs import pair_jobs
from peerwatch.app.queries.window import time_window
from peerwatch.app.runtime.config import Settings
from peerwatch.app.schemas.series import (
    BaselineOut,
    ExpectedOut,
    SeriesBucket,
    SeriesPoint,
    SeriesResponse,
)
from peerwatch.app.store.measurement_keys import pair_key_id
from peerwatch.app.store.sql import epoch_seconds
from peerwatch.app.store.tables.history import (
    Measurement,
    MeasurementRollup,
    foreign_bytes_of,
)
from peerwatch.probes.report import TestName, unit_of

TARGET_BUCKETS = 300
NICE_STEPS = (60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400)
MAX_LISTED = 1_000  # contended / failed points listed beside the buckets


@dataclass
class Agg:
    lo: float
    hi: float
    total: float
    count: int

    def merge(self, other: Agg) -> None:
        self.lo, self.hi = min(self.lo, other.lo), max(self.hi, other.hi)
        self.total += other.total
        self.count += other.count


def choose_step(span_s: float, hourly: bool) -> int:
    """A round step giving about TARGET_BUCKETS buckets (whole hours for rollups)."""
    want = span_s / TARGET_BUCKETS
    step = next((s for s in NICE_STEPS if s >= want), 86_400 * math.ceil(want / 86_400))
    return max(step, 3600) if hourly else step


def _raw_buckets(session: Session, where: list, step: int) -> dict[int, Agg]:
    bucket = (epoch_seconds(Measurement.measured_at) // step).label("bucket")
    rows: Any = session.execute(
        select(bucket, func.min(Measurement.value), func.max(Measurement.value),
               func.sum(Measurement.value), func.count())
        .where(*where, Measurement.error.is_(None), Measurement.contended.is_(False))
        .group_by(bucket))
    return {int(b): Agg(lo, hi, total, n) for b, lo, hi, total, n in rows if n}


def _rollup_buckets(session: Session, where: list, step: int) -> dict[int, Agg]:
    bucket = (epoch_seconds(MeasurementRollup.hour) // step).label("bucket")
    rows: Any = session.execute(
        select(bucket, func.min(MeasurementRollup.min), func.max(MeasurementRollup.max),
               func.sum(MeasurementRollup.sum), func.sum(MeasurementRollup.count))
        .where(*where, MeasurementRollup.count > 0).group_by(bucket))
    return {int(b): Agg(lo, hi, total, int(n)) for b, lo, hi, total, n in rows if n}


def _points(session: Session, where: list, which: ColumnElement[bool]) -> list[SeriesPoint]:
    rows = session.execute(
        select(Measurement.measured_at, Measurement.value, Measurement.foreign_bytes,
               Measurement.error, Measurement.throttle).where(*where, which)
        .order_by(Measurement.measured_at.desc()).limit(MAX_LISTED))
    return [SeriesPoint(at=at, value=v, foreign_bytes=foreign_bytes_of(fb), error=err, throttle=th)
            for at, v, fb, err, th in reversed(rows.all())]


def _hourly(session: Session, key: list, raw_key: list, since: datetime, until: datetime,
            step: int) -> dict[int, Agg]:
    rolled = session.scalar(select(func.max(MeasurementRollup.hour)).where(*key))
    rolled_until = rolled + timedelta(hours=1) if rolled else since
    aggs = _rollup_buckets(session, [*key, MeasurementRollup.hour >= since,
                                     MeasurementRollup.hour < min(rolled_until, until)], step)
    if rolled_until < until:
        start = max(since, rolled_until)
        fresh = _raw_buckets(session, [*raw_key, Measurement.measured_at >= start,
                                       Measurement.measured_at <= until], step)
        for b, agg in fresh.items():
            aggs[b].merge(agg) if b in aggs else aggs.setdefault(b, agg)
    return aggs


def pair_series(session: Session, settings: Settings, host: str, src: int, dst: int,
                test: str, since: datetime | None = None, until: datetime | None = None,
                step: int | None = None) -> SeriesResponse:
    """Bucketed history of `test` from GPU `src` to GPU `dst` on `host`.

    Defaults: the 24 hours up to now; a step giving about 300 buckets. Raises NotFound for an
    unknown host, GPU or test name, ValueError for an empty range or too many buckets.
    """
    row = get_host(session, host)
    try:
        name = TestName(test)
    except ValueError:
        raise NotFound("test", test) from None
    fabric = load_fabric(session, row)
    for gpu in (src, dst):
        if gpu not in fabric.gpus and gpu not in fabric.missing_gpus:
            raise NotFound("GPU", gpu, where=row.name)
    raw_max = settings.series_raw_max_s
    window = time_window(since, until, step, timedelta(days=1),
                         lambda span: choose_step(span, span > raw_max))
    since, until, step = window.since, window.until, window.step
    hourly = window.span_s > raw_max
    if hourly and step % 3600:
        raise ValueError(f"a range over {raw_max:.0f} s reads hourly "
                         "rollups: step must be a multiple of 3600")
    key_id = pair_key_id(session, row.id, src, dst, name.value)  # None: never reported
    raw_key = [false() if key_id is None else Measurement.key_id == key_id]
    in_range = [*raw_key, Measurement.measured_at >= since, Measurement.measured_at <= until]
    if hourly:
        key = [MeasurementRollup.host_id == row.id, MeasurementRollup.src == src,
               MeasurementRollup.dst == dst, MeasurementRollup.test == name.value]
        aggs = _hourly(session, key, raw_key, since, until, step)
    else:
        aggs = _raw_buckets(session, in_range, step)
    buckets = [SeriesBucket(start=datetime.fromtimestamp(b * step, UTC), min=a.lo,
                            mean=a.total / a.count, max=a.hi, count=a.count)
               for b, a in sorted(aggs.items())]
    base = judged_baseline(session, row.id, (src, dst, name))
    expect = fabric.full_expectation(name, src, dst)  # what the pair is judged against
    return SeriesResponse(
        host=row.name, src=src, dst=dst, test=name, unit=unit_of(name), since=since,
        until=until, step_s=step, source="hourly" if hourly else "raw", buckets=buckets,
        baseline=BaselineOut(value=base.value, spread=base.spread, n=base.n,
                             window_s=settings.baseline_window_s, updated_at=base.updated_at)
        if base else None,
        expected=ExpectedOut(value=expect.value, basis=expect.basis) if expect else None,
        contended=_points(session, in_range, and_(Measurement.contended.is_(True),
                                                  Measurement.error.is_(None))),
        failures=_points(session, in_range, Measurement.error.is_not(None)),
        throttled=_points(session, in_range, and_(Measurement.throttle.is_not(None),
                                                  Measurement.error.is_(None))),
        jobs=pair_jobs(session, row, {src, dst}, since, until),
    )
