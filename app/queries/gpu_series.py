"""Per GPU, the SM clock, power and temperature the probe sampled around each sweep (the
clocks sample stored with `gpu_samples`, migration 0017): the host page draws them beside
the bandwidth, so a slow pair can be read against a power cap or a hot GPU. Never writes."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from peerwatch.app.queries.common import get_host
from peerwatch.app.store.clocks_row import clocks_of
from peerwatch.app.store.tables.history import GpuSample

DEFAULT_RANGE = timedelta(hours=6)
MAX_ROWS = 20_000  # samples read for one answer (8 GPUs, a sample each 30 s: 20 h)


def _watts(milliwatts: Any) -> float | None:
    return None if milliwatts is None else round(float(milliwatts) / 1000, 1)


def gpu_series(session: Session, name: str, since: datetime | None, until: datetime | None,
               now: datetime) -> dict[str, Any]:
    """GET /api/v1/hosts/{host}/gpus/series: each GPU's samples with a clocks reading in
    [since, until] (default: the 6 h before `until`, itself default now), oldest first."""
    host = get_host(session, name)
    end = until or now
    start = since or end - DEFAULT_RANGE
    rows = session.execute(
        select(GpuSample.gpu, GpuSample.at, GpuSample.clocks)
        .where(GpuSample.host_id == host.id, GpuSample.at >= start, GpuSample.at <= end,
               GpuSample.clocks.is_not(None))
        .order_by(GpuSample.at.desc()).limit(MAX_ROWS)).all()
    gpus: dict[int, dict[str, list[Any]]] = defaultdict(
        lambda: {"at": [], "sm_clock_mhz": [], "power_w": [], "temperature_c": []})
    limits: dict[int, dict[str, Any]] = {}
    for gpu, at, clocks in reversed(rows):
        c = clocks_of(clocks) or {}
        series = gpus[gpu]
        series["at"].append(at)
        series["sm_clock_mhz"].append(c.get("sm_clock_mhz"))
        series["power_w"].append(_watts(c.get("power_mw")))
        series["temperature_c"].append(c.get("temperature_c"))
        limits[gpu] = {"sm_clock_max_mhz": c.get("sm_clock_max_mhz"),
                       "power_limit_w": _watts(c.get("power_limit_mw")),
                       "slowdown_temperature_c": c.get("slowdown_temperature_c")}
    return {"host": host.name, "since": start, "until": end, "generated_at": now,
            "gpus": [{"gpu": g, **gpus[g], **limits[g]} for g in sorted(gpus)]}
