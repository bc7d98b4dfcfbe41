"""Growth per second of the cumulative NVLink and PCIe counters over a window, per link or
GPU: what the link and GPU judges read (by rate, never by lifetime size)."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.analysis.rates import rate_per_s
from app.models import GpuSample, LinkSample

COUNTERS = ("tx_bytes", "rx_bytes", "replay", "recovery", "crc_flit", "crc_data", "ecc_data")


def link_rates(session: Session, host_id: int,
               since: datetime) -> dict[tuple[int, int], dict[str, float | None]]:
    """Growth per second of every counter of every link since `since`."""
    cols = [getattr(LinkSample, c) for c in COUNTERS]
    rows = session.execute(
        select(LinkSample.gpu, LinkSample.link, LinkSample.at, *cols)
        .where(LinkSample.host_id == host_id, LinkSample.at >= since)
        .order_by(LinkSample.at, LinkSample.id))
    series: dict[tuple[int, int], list[tuple]] = defaultdict(list)
    for gpu, link, at, *values in rows:
        series[(gpu, link)].append((at, *values))
    return {key: {c: rate_per_s([(p[0], p[i + 1]) for p in points])
                  for i, c in enumerate(COUNTERS)}
            for key, points in series.items()}


def pcie_replay_rates(session: Session, host_id: int, since: datetime) -> dict[int, float | None]:
    rows = session.execute(
        select(GpuSample.gpu, GpuSample.at, GpuSample.pcie_replay)
        .where(GpuSample.host_id == host_id, GpuSample.at >= since)
        .order_by(GpuSample.at, GpuSample.id))
    series: dict[int, list[tuple[datetime, int | None]]] = defaultdict(list)
    for gpu, at, replay in rows:
        series[gpu].append((at, replay))
    return {gpu: rate_per_s(points) for gpu, points in series.items()}
