"""Per-link rates over time: throughput (bytes/s) and error-counter growth (per second),
from consecutive cumulative counter samples, resets handled (see `analysis/rates.py`).

Each increase between two samples is credited to the bucket its later sample falls in, and
a bucket's rate is the sum of its increases over the time they span. The NVLink rows are
sparse (app/ingest/sparse_links.py): the readings they left out as repeats are put back
(app/queries/link_fill.py), so an idle port charts its zeros as when every reading was kept.
"""

from __future__ import annotations

import math
from collections import defaultdict
from datetime import UTC, datetime, timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from peerwatch.app.analysis.rates import increases
from peerwatch.app.queries.common import NotFound, get_host
from peerwatch.app.queries.fabric import load_fabric
from peerwatch.app.queries.link_fill import carried_rows, chart_times, filled
from peerwatch.app.queries.window import time_window
from peerwatch.app.schemas.series import (
    LinkRatePoint,
    LinkSeries,
    LinkSeriesResponse,
    PcieRatePoint,
    PcieSeries,
)
from peerwatch.app.store.tables.history import GpuSample, LinkSample

COUNTERS = ("tx_bytes", "rx_bytes", "replay", "recovery", "crc_flit", "crc_data", "ecc_data")
FIELDS = ("tx_bps", "rx_bps", "replay_per_s", "recovery_per_s", "crc_flit_per_s",
          "crc_data_per_s", "ecc_data_per_s")


def bucket_rates(points: list[tuple[datetime, int | None]],
                 step: int) -> dict[int, float]:
    """{bucket: growth per second} for one counter's (time, value) readings."""
    grown: dict[int, float] = defaultdict(float)
    spent: dict[int, float] = defaultdict(float)
    for t0, t1, delta in increases(points):
        b = int(t1.timestamp()) // step
        grown[b] += delta
        spent[b] += (t1 - t0).total_seconds()
    return {b: grown[b] / spent[b] for b in grown if spent[b] > 0}


def _series_of(rows: list[tuple], step: int) -> list[LinkRatePoint]:
    per_counter = [bucket_rates([(r[0], r[i + 1]) for r in rows], step)
                   for i in range(len(COUNTERS))]
    buckets = sorted(set().union(*per_counter))
    return [LinkRatePoint(start=datetime.fromtimestamp(b * step, UTC),
                          **{f: rates.get(b) for f, rates in zip(FIELDS, per_counter,
                                                                 strict=True)})
            for b in buckets]


def link_series(session: Session, host: str, since: datetime | None = None,
                until: datetime | None = None, step: int | None = None,
                gpu: int | None = None, link: int | None = None) -> LinkSeriesResponse:
    """Rates of every NVLink port (or of `gpu`/`link` only) and PCIe replays per GPU.

    Defaults: the hour up to now, a step giving about 60 points. Raises NotFound for an
    unknown host, GPU or link, ValueError for an empty range or too many buckets.
    """
    row = get_host(session, host)
    fabric = load_fabric(session, row)
    if gpu is not None and gpu not in fabric.gpus and gpu not in fabric.missing_gpus:
        raise NotFound("GPU", gpu, where=row.name)
    if link is not None and not any(p.link == link and (gpu is None or p.gpu == gpu)
                                    for p in fabric.nvlinks):
        raise NotFound("NVLink", link, where=row.name)
    window = time_window(since, until, step, timedelta(hours=1),
                         lambda span: max(10, math.ceil(span / 60)))
    since, until, step = window.since, window.until, window.step
    wanted = {(p.gpu, p.link) for p in fabric.nvlinks
              if (gpu is None or p.gpu == gpu) and (link is None or p.link == link)}
    per_gpu = _gpu_readings(session, row.id, since, until, gpu)
    per_link = _link_readings(session, row.id, since, until, wanted, gpu, link)
    times = {g: chart_times((at for at, _ in points), step) for g, points in per_gpu.items()}
    per_link = {port: points for port, rows in per_link.items()
                if (points := filled(rows, times.get(port[0], []), since))}
    return LinkSeriesResponse(
        host=row.name, since=since, until=until, step_s=step,
        links=[LinkSeries(gpu=g, link=k, points=_series_of(rows, step))
               for (g, k), rows in sorted(per_link.items())],
        pcie=[PcieSeries(gpu=g, points=[
            PcieRatePoint(start=datetime.fromtimestamp(b * step, UTC), replay_per_s=r)
            for b, r in sorted(bucket_rates(points, step).items())])
            for g, points in sorted(per_gpu.items())],
    )


def _link_readings(session: Session, host_id: int, since: datetime, until: datetime,
                   wanted: set[tuple[int, int]], gpu: int | None, link: int | None
                   ) -> dict[tuple[int, int], list[tuple]]:
    """Each port's rows (at, *COUNTERS) in the window, after its newest row before it (the
    rows are sparse: app/queries/link_fill.py carries it forward)."""
    query = select(LinkSample.gpu, LinkSample.link, LinkSample.at,
                   *(getattr(LinkSample, c) for c in COUNTERS)).where(
        LinkSample.host_id == host_id, LinkSample.at >= since, LinkSample.at <= until)
    if gpu is not None:
        query = query.where(LinkSample.gpu == gpu)
    if link is not None:
        query = query.where(LinkSample.link == link)
    per_link: dict[tuple[int, int], list[tuple]] = defaultdict(list)
    for port, (at, *values) in carried_rows(session, host_id, since, COUNTERS, wanted).items():
        per_link[port].append((_aware(at), *values))
    for g, k, at, *values in session.execute(query.order_by(LinkSample.at, LinkSample.gpu,
                                                              LinkSample.link)):
        per_link[(g, k)].append((_aware(at), *values))
    return per_link


def _gpu_readings(session: Session, host_id: int, since: datetime, until: datetime,
                  gpu: int | None) -> dict[int, list[tuple[datetime, int | None]]]:
    """Each GPU's (time, PCIe replays) readings in the window: every reading of the host."""
    query = select(GpuSample.gpu, GpuSample.at, GpuSample.pcie_replay).where(
        GpuSample.host_id == host_id, GpuSample.at >= since, GpuSample.at <= until)
    if gpu is not None:
        query = query.where(GpuSample.gpu == gpu)
    per_gpu: dict[int, list[tuple[datetime, int | None]]] = defaultdict(list)
    for g, at, replay in session.execute(query.order_by(GpuSample.at, GpuSample.gpu)):
        per_gpu[g].append((_aware(at), replay))
    return per_gpu


def _aware(at: datetime) -> datetime:
    """SQLite hands timestamps back naive (they are stored in UTC)."""
    return at if at.tzinfo else at.replace(tzinfo=UTC)
