"""A host's newest sweeps' GPU throttles, as stored with their clocks samples (migration
0017): what the throttle verdict and the "slow, GPU3 power-capped" explanation read. Never
writes. Sweeps whose probe sent no clocks are left out (they say nothing either way)."""

from __future__ import annotations

from collections import defaultdict
from datetime import timedelta

from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session

from peerwatch.app.analysis.throttle import SweepThrottle, clocks_detail
from peerwatch.app.store.clocks_row import clocks_of
from peerwatch.app.store.tables.history import GpuSample, ReportRow
from peerwatch.probes.clocks import GpuClocks

MARGIN = timedelta(days=1)  # a sample taken before its report started (a skewed probe)


def _clocks(gpu: int, reasons: int | None, stored: list | dict | None) -> GpuClocks | None:
    try:
        return GpuClocks(gpu=gpu, reasons=reasons, **(clocks_of(stored) or {}))
    except ValueError:
        return None  # a row written by another version: no detail, the kinds still stand


# the reads of `throttle_history`, built once (building a select cost more than its answer)
_SWEEPS = select(ReportRow.id, ReportRow.started_at).where(
    ReportRow.host_id == bindparam("host"), ReportRow.kind == "sweep"
).order_by(ReportRow.id.desc()).limit(bindparam("sweeps"))
_CLOCKS = select(GpuSample.report_id, GpuSample.gpu, GpuSample.throttle,
                 GpuSample.clock_reasons, GpuSample.clocks).where(
    GpuSample.host_id == bindparam("host"), GpuSample.at >= bindparam("since"),
    GpuSample.report_id.in_(bindparam("reports", expanding=True))).order_by(GpuSample.at)


def throttle_history(session: Session, host_id: int, sweeps: int
                     ) -> dict[int, list[SweepThrottle | None]]:
    """GPU -> its throttle in each of the host's newest `sweeps` sweeps with clocks, newest
    first (None: it ran free)."""
    reports = session.execute(_SWEEPS, {"host": host_id, "sweeps": sweeps}).all()
    if not reports:
        return {}
    since = min(at for _, at in reports) - MARGIN
    rows = session.execute(_CLOCKS, {"host": host_id, "since": since,
                                     "reports": [pk for pk, _ in reports]}).all()
    found: dict[tuple[int, int], SweepThrottle | None] = {}
    for report, gpu, throttle, reasons, stored in rows:
        if stored is None:  # no clocks in this sample (JSON null reads back as None)
            continue
        if throttle:
            shown = _clocks(gpu, reasons, stored)
            found[(report, gpu)] = SweepThrottle(gpu, tuple(throttle.split(",")),
                                                 clocks_detail(shown) if shown else "")
        else:
            found.setdefault((report, gpu), None)
    out: dict[int, list[SweepThrottle | None]] = defaultdict(list)
    for pk, _ in reports:  # newest first
        for (report, gpu), t in sorted(found.items()):
            if report == pk:
                out[gpu].append(t)
    return dict(out)
