"""History tables: append-only reports, measurements and samples, pruned by age."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    Float,
    ForeignKey,
    Index,
    String,
    Text,
    UniqueConstraint,
    Uuid,
)
from sqlalchemy.orm import Mapped, mapped_column

from peerwatch.app.store.base import Base, BigId


class ReportRow(Base):
    __tablename__ = "reports"
    __table_args__ = (Index(None, "host_id", "finished_at"), Index(None, "received_at"))

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    report_id: Mapped[uuid.UUID] = mapped_column(Uuid, unique=True)
    host_id: Mapped[int] = mapped_column(ForeignKey("hosts.id", ondelete="CASCADE"))
    schema_version: Mapped[int]
    kind: Mapped[str] = mapped_column(String(16))
    started_at: Mapped[datetime]
    finished_at: Mapped[datetime]
    received_at: Mapped[datetime]
    gpu_time_s: Mapped[float] = mapped_column(Float)
    wall_time_s: Mapped[float] = mapped_column(Float)
    device_memory_bytes_max: Mapped[int] = mapped_column(BigInteger)
    agent_cpu_s: Mapped[float] = mapped_column(Float)
    agent_rss_bytes: Mapped[int] = mapped_column(BigInteger)
    dropped_reports: Mapped[int]
    skipped: Mapped[list[Any]]
    errors: Mapped[list[Any]]
    # migration 0006: SHA-256 of the report's canonical JSON, so a report_id reused for a
    # different report is a 409 rather than a silent "duplicate" (NULL: stored before 0006).
    digest: Mapped[str | None] = mapped_column(String(64))


class Measurement(Base):
    """One TransferResult. `value` is None exactly when `error` is set. A per-GPU test (h2d,
    d2h, local: `dst` null on the wire) is stored with src = dst = the GPU, as are its
    baseline, rollups and judged row: the diagonal of the pair tables."""

    __tablename__ = "measurements"
    __table_args__ = (
        Index(None, "host_id", "src", "dst", "test", "measured_at"),
        Index(None, "measured_at"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    report_id: Mapped[int] = mapped_column(
        BigId, ForeignKey("reports.id", ondelete="CASCADE"), index=True
    )
    host_id: Mapped[int] = mapped_column(ForeignKey("hosts.id", ondelete="CASCADE"))
    test: Mapped[str] = mapped_column(String(16))
    src: Mapped[int | None]
    dst: Mapped[int | None]
    gpus: Mapped[list[Any]]
    value: Mapped[float | None] = mapped_column(Float)
    unit: Mapped[str] = mapped_column(String(8))
    samples: Mapped[list[Any]]
    bytes_per_copy: Mapped[int] = mapped_column(BigInteger)
    copies: Mapped[int]
    gpu_time_s: Mapped[float] = mapped_column(Float)
    device_memory_bytes: Mapped[int] = mapped_column(BigInteger)
    verified: Mapped[bool] = mapped_column(Boolean)
    contended: Mapped[bool] = mapped_column(Boolean)
    foreign_bytes: Mapped[int] = mapped_column(BigInteger)
    error: Mapped[str | None] = mapped_column(Text)
    measured_at: Mapped[datetime]
    # migration 0017: the throttled GPUs it touched ("GPU3 power-capped"), or None
    throttle: Mapped[str | None] = mapped_column(String(200))


# Every port of a host is written whole at least this often (by its readings' time); in
# between a port's row is written only when an error counter moved (app/ingest/
# sparse_links.py), so a rate query reaches back this far for each port's last value.
LINK_KEYFRAME_S = 300.0


class LinkSample(Base):
    """Cumulative counters of one NVLink port at one time (judge rates, never sizes). Sparse:
    a reading whose error counters equal the port's previous one is not stored between
    keyframes (LINK_KEYFRAME_S), so the series' tx/rx bytes are as fine as the keyframes."""

    __tablename__ = "link_samples"
    # (host_id, at): a host's window across all its links, what every read asks (0026)
    __table_args__ = (Index(None, "host_id", "at"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    report_id: Mapped[int] = mapped_column(
        BigId, ForeignKey("reports.id", ondelete="CASCADE"), index=True
    )
    host_id: Mapped[int] = mapped_column(ForeignKey("hosts.id", ondelete="CASCADE"))
    at: Mapped[datetime]
    gpu: Mapped[int]
    link: Mapped[int]
    tx_bytes: Mapped[int | None] = mapped_column(BigInteger)
    rx_bytes: Mapped[int | None] = mapped_column(BigInteger)
    replay: Mapped[int | None] = mapped_column(BigInteger)
    recovery: Mapped[int | None] = mapped_column(BigInteger)
    crc_flit: Mapped[int | None] = mapped_column(BigInteger)
    crc_data: Mapped[int | None] = mapped_column(BigInteger)
    ecc_data: Mapped[int | None] = mapped_column(BigInteger)


class GpuSample(Base):
    """Per-GPU counters and activity at one time: PCIe replays, utilization, processes."""

    __tablename__ = "gpu_samples"
    __table_args__ = (Index(None, "host_id", "at"),)  # what every read asks (0026)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    report_id: Mapped[int] = mapped_column(
        BigId, ForeignKey("reports.id", ondelete="CASCADE"), index=True
    )
    host_id: Mapped[int] = mapped_column(ForeignKey("hosts.id", ondelete="CASCADE"))
    at: Mapped[datetime]
    gpu: Mapped[int]
    pcie_replay: Mapped[int | None] = mapped_column(BigInteger)
    utilization_pct: Mapped[float | None] = mapped_column(Float)
    memory_used_bytes: Mapped[int | None] = mapped_column(BigInteger)
    compute_processes: Mapped[int | None]
    # migration 0017: clocks-event reasons (NVML's mask), the sweep's throttle kinds
    # ("power,thermal"; app/analysis/throttle.py) and the rest of the clocks sample
    clock_reasons: Mapped[int | None] = mapped_column(BigInteger)
    throttle: Mapped[str | None] = mapped_column(String(32))
    clocks: Mapped[dict[str, Any] | None]
    # migration 0032: PCIe AER totals of the GPU and its upstream bridge together
    # (probes/gpu_health.py PcieAer.total), judged by their rate as link errors are
    aer_correctable: Mapped[int | None] = mapped_column(BigInteger, default=None)
    aer_nonfatal: Mapped[int | None] = mapped_column(BigInteger, default=None)
    aer_fatal: Mapped[int | None] = mapped_column(BigInteger, default=None)


class Baseline(Base):
    """Robust centre (median) and spread (MAD) of a pair's recent healthy history."""

    __tablename__ = "baselines"
    __table_args__ = (UniqueConstraint("host_id", "src", "dst", "test"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    host_id: Mapped[int] = mapped_column(ForeignKey("hosts.id", ondelete="CASCADE"))
    src: Mapped[int]
    dst: Mapped[int]
    test: Mapped[str] = mapped_column(String(16))
    value: Mapped[float] = mapped_column(Float)
    spread: Mapped[float] = mapped_column(Float)
    n: Mapped[int]
    window_s: Mapped[float] = mapped_column(Float)
    updated_at: Mapped[datetime]


class MeasurementRollup(Base):
    """Hourly aggregate of one (pair, test): min/max/sum over uncontended successes."""

    __tablename__ = "measurement_rollups"
    __table_args__ = (
        UniqueConstraint("host_id", "src", "dst", "test", "hour"),
        Index(None, "hour"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    host_id: Mapped[int] = mapped_column(ForeignKey("hosts.id", ondelete="CASCADE"))
    src: Mapped[int]
    dst: Mapped[int]
    test: Mapped[str] = mapped_column(String(16))
    hour: Mapped[datetime]
    count: Mapped[int]
    min: Mapped[float | None] = mapped_column(Float)
    max: Mapped[float | None] = mapped_column(Float)
    sum: Mapped[float | None] = mapped_column(Float)
    contended_count: Mapped[int]
    error_count: Mapped[int]
