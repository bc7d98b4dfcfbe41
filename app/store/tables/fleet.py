"""Fleet-relative statistics and job snapshots."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import (
    Float,
    Index,
    String,
    UniqueConstraint,
    Uuid,
)
from sqlalchemy.orm import Mapped, mapped_column

from peerwatch.app.store.base import Base


class FleetPeerStat(Base):
    """The fleet's distribution of the newest healthy judged values of one test in one peer
    group (GPU model, topology class, driver). Recomputed by the leader's periodic round
    (`app/services/fleet_peers.py`); a host judgement reads its few rows, never the fleet.
    `changed_at` moves only when the median moved by more than PEERWATCH_FLEET_PEER_REJUDGE
    since `ref_median`, or the group crossed the minimum size: what re-judges a host."""

    __tablename__ = "fleet_peer_stats"
    __table_args__ = (UniqueConstraint("gpu_model", "topology", "driver", "test"),
                      Index(None, "gpu_model", "driver"))

    id: Mapped[int] = mapped_column(primary_key=True)
    gpu_model: Mapped[str] = mapped_column(String(128))
    topology: Mapped[str] = mapped_column(String(32))
    driver: Mapped[str] = mapped_column(String(64))
    test: Mapped[str] = mapped_column(String(16))
    hosts: Mapped[int]
    pairs: Mapped[int]
    median: Mapped[float | None] = mapped_column(Float)
    low: Mapped[float | None] = mapped_column(Float, doc="The worse-side percentile.")
    ref_median: Mapped[float | None] = mapped_column(Float)
    computed_at: Mapped[datetime]
    changed_at: Mapped[datetime]


class JobSnapshot(Base):
    """A job snapshot (`probes/snapshot.py`) as it arrived: the host's fabric state around a
    job (Slurm prolog/epilog) or taken by hand, kept whole in `body` for the diff. The host
    is a name, not a key: a node's prolog may post before its probe ever reported."""

    __tablename__ = "job_snapshots"
    # partitioned by day on PostgreSQL (0029): unique with the partition column (a retry
    # repeats its taken_at; the store looks the snapshot_id up first)
    __table_args__ = (Index(None, "host", "taken_at"), Index(None, "host", "job_id"),
                      Index(None, "taken_at"), UniqueConstraint("snapshot_id", "taken_at"))

    id: Mapped[int] = mapped_column(primary_key=True)
    snapshot_id: Mapped[uuid.UUID] = mapped_column(Uuid)
    host: Mapped[str] = mapped_column(String(253))
    job_id: Mapped[str | None] = mapped_column(String(64))
    phase: Mapped[str] = mapped_column(String(16))
    taken_at: Mapped[datetime]
    received_at: Mapped[datetime]
    digest: Mapped[str] = mapped_column(String(64))  # SHA-256 of the body: retry vs reuse
    body: Mapped[dict[str, Any]]
