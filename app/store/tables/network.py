"""Between hosts (migration 0032): the network map, cross-host results, the pair jobs.

`network_hosts`: where each host sits (leaf switch, spine group, NVLink domain) and its
NIC line rate, as the operator's map or the scheduler's topology says: what a `host_pair`
result is expected from and what the planner covers. `host_pair_results`: every cross-host
result (a `TransferResult` with `peer_host`), whoever sent it. `pair_jobs`: each pair test
the planner submitted to the scheduler that owns the nodes, and its ranks' rendezvous.
docs/network.md.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Float, Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from peerwatch.app.store.base import Base, BigId


class NetworkHost(Base):
    __tablename__ = "network_hosts"

    host: Mapped[str] = mapped_column(String(253), primary_key=True)
    leaf: Mapped[str] = mapped_column(String(128))  # the leaf (top-of-rack) switch
    spine: Mapped[str | None] = mapped_column(String(128))  # the spine group above the leaf
    domain: Mapped[str | None] = mapped_column(String(128))  # NVL72 domain (cross-tray NVLink)
    line_rate_bps: Mapped[float] = mapped_column(Float)  # its NIC's line rate, bytes/s
    updated_at: Mapped[datetime]


class HostPairResult(Base):
    __tablename__ = "host_pair_results"
    __table_args__ = (Index(None, "host", "peer_host", "test", "measured_at"),
                      Index(None, "measured_at"))

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    host: Mapped[str] = mapped_column(String(253))  # the reporting host (src's)
    peer_host: Mapped[str] = mapped_column(String(253))  # dst's
    test: Mapped[str] = mapped_column(String(32))
    src: Mapped[int]
    dst: Mapped[int]
    value: Mapped[float | None] = mapped_column(Float)
    error: Mapped[str | None] = mapped_column(Text)
    job: Mapped[str | None] = mapped_column(String(128))
    line_rate_bps: Mapped[float | None] = mapped_column(Float)
    measured_at: Mapped[datetime]
    received_at: Mapped[datetime]


class PairJob(Base):
    """One pair test submitted as a low-priority, preemptible job (planned -> submitted ->
    running (both ranks met) -> done | failed | cancelled)."""

    __tablename__ = "pair_jobs"
    __table_args__ = (Index(None, "state"), Index(None, "host", "peer_host"))

    id: Mapped[int] = mapped_column(primary_key=True)
    host: Mapped[str] = mapped_column(String(253))  # rank 0
    peer_host: Mapped[str] = mapped_column(String(253))  # rank 1
    scheduler: Mapped[str] = mapped_column(String(32))  # slurm | kubernetes
    scheduler_job: Mapped[str | None] = mapped_column(String(128))
    state: Mapped[str] = mapped_column(String(16))
    reason: Mapped[str] = mapped_column(Text)  # why the planner chose this pair
    ranks: Mapped[dict[str, Any]]  # rank -> {"host", "address", "at"}: the rendezvous
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]
