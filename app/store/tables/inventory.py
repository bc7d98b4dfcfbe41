"""Inventory tables: the latest known shape of each host, upserted by every report."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    Float,
    ForeignKey,
    String,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from peerwatch.app.store.base import Base


class Host(Base):
    __tablename__ = "hosts"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(253), unique=True)
    fabric: Mapped[str] = mapped_column(String(64))
    driver_version: Mapped[str | None] = mapped_column(String(64))
    cuda_version: Mapped[str | None] = mapped_column(String(64))
    probe_version: Mapped[str | None] = mapped_column(String(64))
    first_seen: Mapped[datetime]
    last_report_at: Mapped[datetime | None]
    last_sweep_at: Mapped[datetime | None]
    # migration 0004: the server's clock, which staleness is judged by (a probe's clock may
    # be off), and how far the probe's clock was from it in the newest report.
    last_received_at: Mapped[datetime | None]
    clock_skew_s: Mapped[float | None] = mapped_column(Float)
    # ... and what lets a judgement be skipped when nothing judged has changed: when the
    # inventory last changed, and the sum of the judged error counters in the newest report.
    inventory_changed_at: Mapped[datetime | None]
    error_total: Mapped[int | None] = mapped_column(BigInteger)
    # migration 0010: when the fleet peer stats of this host's groups last changed materially
    # (set by the recompute, app/services/fleet_peers.py): a judgement made before it is stale.
    peers_changed_at: Mapped[datetime | None]
    # migration 0014: the server refused this host's reports (429/503): when it last did, and
    # how many since it last stored one (flushed in batches by app/ingest/heard.py).
    last_refused_at: Mapped[datetime | None]
    refused_reports: Mapped[int] = mapped_column(default=0, server_default="0")
    # migration 0020: when the probe's newest request arrived, whatever became of it (stored,
    # refused, or dropped when the probe timed out first): staleness counts it as heard.
    last_heard_at: Mapped[datetime | None]
    # migration 0021: when ingest last stored Xid/SXid events of this host (the server's
    # clock): a judgement made before it has not read them (app/judging/unchanged.py).
    events_stored_at: Mapped[datetime | None]
    # migration 0025: when the newest full sweep (every GPU tested, none skipped) arrived,
    # on the server's clock: a node peerwatch took out returns only after one was judged.
    full_sweep_at: Mapped[datetime | None]


def last_heard_at(row: Host) -> datetime | None:
    """When the server last heard from this host's probe, by the server's own clock: its
    newest stored report, or a request it refused because it was busy or had not stored
    yet, or a heartbeat (app/ingest/heard.py)."""
    return newest_heard(row.last_received_at, row.last_report_at, row.last_refused_at,
                        row.last_heard_at)


def newest_heard(received: datetime | None, report: datetime | None,
                 refused: datetime | None, heard: datetime | None) -> datetime | None:
    """`last_heard_at` from the host row's columns, for readers that select them alone
    (`/metrics`: the time its ProbeStale twin judges by must be the server's)."""
    times = [t for t in (received or report, refused, heard) if t is not None]
    return max(times) if times else None


class Gpu(Base):
    __tablename__ = "gpus"
    __table_args__ = (UniqueConstraint("host_id", "index"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    host_id: Mapped[int] = mapped_column(ForeignKey("hosts.id", ondelete="CASCADE"))
    index: Mapped[int]
    uuid: Mapped[str] = mapped_column(String(128))
    name: Mapped[str] = mapped_column(String(128))
    pci_bus_id: Mapped[str] = mapped_column(String(32))
    memory_total_bytes: Mapped[int] = mapped_column(BigInteger)
    cpu_affinity: Mapped[str | None] = mapped_column(String(256))
    numa_node: Mapped[int | None]
    nvlink_count: Mapped[int]
    pcie: Mapped[dict[str, Any]]
    rdma: Mapped[dict[str, Any]]
    switch_fabric: Mapped[dict[str, Any] | None]
    # migration 0032: what the driver says of the GPU (probes/gpu_health.py GpuDriverHealth:
    # recovery action, ECC, row remapping, retired pages); None: the probe sent none
    driver: Mapped[dict[str, Any] | None] = mapped_column(default=None)
    # migration 0009: the NVLink domain (`switch_fabric`'s cluster UUID as 32 hex digits,
    # `app.analysis.domains.domain_key`), written with the inventory so that a domain's
    # GPUs are one indexed select away (`app/queries/domains.py`).
    nvlink_domain: Mapped[str | None] = mapped_column(String(32), index=True)
    present: Mapped[bool] = mapped_column(Boolean, doc="In the host's latest inventory.")
    # written when the row changes and when the GPU goes missing (then: the last report that
    # listed it); a present GPU was seen in its host's newest report (`last_report_at`)
    last_seen_at: Mapped[datetime]


class NvLink(Base):
    __tablename__ = "nvlinks"
    __table_args__ = (UniqueConstraint("host_id", "gpu", "link"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    host_id: Mapped[int] = mapped_column(ForeignKey("hosts.id", ondelete="CASCADE"))
    gpu: Mapped[int]
    link: Mapped[int]
    state: Mapped[str] = mapped_column(String(16))
    version: Mapped[str | None] = mapped_column(String(16))
    speed_bps: Mapped[float | None] = mapped_column(Float)
    remote_type: Mapped[str] = mapped_column(String(16))
    remote_pci_bus_id: Mapped[str | None] = mapped_column(String(32))
    remote_gpu: Mapped[int | None]
    capabilities: Mapped[dict[str, Any]]
    present: Mapped[bool] = mapped_column(Boolean)
    updated_at: Mapped[datetime]


class Pair(Base):
    __tablename__ = "pairs"
    __table_args__ = (UniqueConstraint("host_id", "src", "dst"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    host_id: Mapped[int] = mapped_column(ForeignKey("hosts.id", ondelete="CASCADE"))
    src: Mapped[int]
    dst: Mapped[int]
    topology: Mapped[str] = mapped_column(String(8))
    pcie_path: Mapped[str] = mapped_column(String(8))
    nvlink_width: Mapped[int]
    via_nvswitch: Mapped[bool] = mapped_column(Boolean)
    p2p: Mapped[dict[str, Any]]
    can_access_peer: Mapped[bool | None] = mapped_column(Boolean)
    present: Mapped[bool] = mapped_column(Boolean)
    updated_at: Mapped[datetime]


class HostRuntime(Base):
    """What the host's newest report said about its probe and driver start and Fabric Manager:
    links still train just after either start, so pages settle for a while after them."""

    __tablename__ = "host_runtime"

    host_id: Mapped[int] = mapped_column(ForeignKey("hosts.id", ondelete="CASCADE"),
                                         primary_key=True)
    probe_started_at: Mapped[datetime | None]
    driver_loaded_at: Mapped[datetime | None]
    fabric_manager: Mapped[dict[str, Any] | None]
    # migration 0025: the GPU evidence of the newest report (probes/report.py GpuEvidence:
    # the NVIDIA PCI functions, the GPUs seen since boot); None: the probe sent none
    gpu_evidence: Mapped[dict[str, Any] | None]
    # migration 0032: the IMEX daemon's state of the newest report (probes/gpu_health.py
    # ImexStatus); None: the probe sent none
    imex: Mapped[dict[str, Any] | None]
    # migration 0031: the RDMA NICs of the newest report (probes/nics.py NicDevice, as a
    # list); None: the probe sent none
    nics: Mapped[list[Any] | None] = mapped_column(default=None)
    updated_at: Mapped[datetime]
