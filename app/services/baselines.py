"""Keep each (pair, test)'s baseline current as reports arrive.

A baseline is recomputed at most every `baseline_refresh_s` per (pair, test), and at most
`baseline_refresh_batch` existing ones per report, the stalest first (missing baselines are
always attempted): the median
of a window hardly moves between two sweeps, and reading the window is the costly part of an
ingest, so its cost is spread over several reports instead of landing on one. Each key reads
only its newest `baseline_max_samples` successful, uncontended samples through its index.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import bindparam, insert, select, union_all, update
from sqlalchemy.orm import Session

from app.analysis.baseline import healthy_values, robust_baseline
from app.config import Settings
from app.models import Baseline, Measurement
from app.queries.fabric import HostFabric
from probes.report import TestName

Key = tuple[int, int, str]


BATCH = 100  # keys per statement: well under SQLite's compound-select and variable limits


def _recent_values(session: Session, host_id: int, keys: Iterable[Key], since: datetime,
                   until: datetime, per_key: int) -> dict[Key, list[float]]:
    """The newest `per_key` judged values of each key, each read through the
    (host, src, dst, test, measured_at) index: the cost follows `per_key`, not the window."""
    values: dict[Key, list[float]] = defaultdict(list)
    ordered = sorted(keys)
    for start in range(0, len(ordered), BATCH):
        parts = []
        for src, dst, test in ordered[start:start + BATCH]:
            newest = (
                select(Measurement.src, Measurement.dst, Measurement.test, Measurement.value)
                .where(Measurement.host_id == host_id, Measurement.src == src,
                       Measurement.dst == dst, Measurement.test == test,
                       Measurement.measured_at >= since, Measurement.measured_at <= until,
                       Measurement.error.is_(None), Measurement.contended.is_(False))
                .order_by(Measurement.measured_at.desc()).limit(per_key).subquery()
            )
            parts.append(select(newest))
        for src, dst, test, value in session.execute(union_all(*parts)):
            values[(src, dst, test)].append(value)
    return values


def _at_full_width(fabric: HostFabric, src: int, dst: int) -> bool:
    """A pair running with NVLinks lost teaches its baseline nothing: the lower figures
    would become its normal and hide the loss."""
    pair = fabric.pairs.get((src, dst))
    return pair is None or pair.nvlink_width >= fabric.full_width(src, dst)[0]


def refresh_baselines(session: Session, fabric: HostFabric, keys: set[Key], at: datetime,
                      settings: Settings) -> int:
    """Recompute the due baselines among `keys` as of `at`; returns how many were written."""
    host_id = fabric.host.id
    # (id, updated_at) per key: plain rows, not 392 ORM objects of which a dozen change
    existing = {
        (src, dst, test): (pk, updated_at)
        for pk, src, dst, test, updated_at in session.execute(
            select(Baseline.id, Baseline.src, Baseline.dst, Baseline.test,
                   Baseline.updated_at).where(Baseline.host_id == host_id))
    }
    fresh_after = at - timedelta(seconds=settings.baseline_refresh_s)
    keys = {k for k in keys if _at_full_width(fabric, k[0], k[1])}
    missing = {k for k in keys if k not in existing}
    stale = sorted((existing[k][1], k) for k in keys
                   if k in existing and existing[k][1] < fresh_after)
    # A missing baseline is always attempted (a verdict needs it, and young history is cheap
    # to read); refreshes of existing ones go stalest first, a batch per report.
    due = missing | {k for _, k in stale[:settings.baseline_refresh_batch]}
    if not due:
        return 0
    since = at - timedelta(seconds=settings.baseline_window_s)
    values = _recent_values(session, host_id, due, since, at, settings.baseline_max_samples)
    inserts: list[dict[str, Any]] = []
    updates: list[dict[str, Any]] = []
    for key in sorted(due):
        src, dst, test = key
        expect = fabric.expectation(TestName(test), src, dst)
        kept = healthy_values(TestName(test), values.get(key, []),
                              expect.value if expect else None,
                              settings.degraded_ratio_expected)
        stats = robust_baseline(kept, settings.baseline_min_samples)
        if stats is None:
            continue
        fields = {"value": stats.value, "spread": stats.spread, "n": stats.n,
                  "window_s": settings.baseline_window_s, "updated_at": at}
        if key in existing:
            updates.append({"pk": existing[key][0], **fields})
        else:
            inserts.append({"host_id": host_id, "src": src, "dst": dst, "test": test, **fields})
    if inserts:  # a replica inserting the same key at once: IntegrityError, ingest retries
        session.execute(insert(Baseline), inserts)
    if updates:
        session.connection().execute(
            update(Baseline).where(Baseline.id == bindparam("pk")), updates)
    return len(inserts) + len(updates)
