"""RDMA NIC port samples: each port's state, rate and counters per reading (migration 0031).

Few rows (a port or two per NIC, a reading only when a judged value of one moved, or a
keyframe is due), pruned by age with the other raw samples; the judge reads a window of
them, the left-out repeats put back, and takes the counters' rates
(app/analysis/nic_health.py). The NIC inventory of the newest report sits in
`host_runtime.nics` (inventory.py).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Float, ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from peerwatch.app.store.base import Base, BigId

# A host's port readings are written whole when a judged value of a port moved (its
# traffic counters ride along), and at least this often (app/ingest/sparse_nics.py); a
# reader reaches back this far for the reading the window starts on and puts the left-out
# repeats back (app/queries/nics.py).
NIC_KEYFRAME_S = 3600.0


class NicPortSample(Base):
    # no primary key index on PostgreSQL (0033), as the other raw samples (0029)
    __tablename__ = "nic_port_samples"
    __table_args__ = (Index(None, "host_id", "at"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    # the report it came in, without a key: reports are partitioned and expire by their own
    # time (0029), as this table does (app/store/retention.py)
    report_id: Mapped[int] = mapped_column(BigId)
    host_id: Mapped[int] = mapped_column(ForeignKey("hosts.id", ondelete="CASCADE"))
    at: Mapped[datetime]
    device: Mapped[str] = mapped_column(String(64))
    port: Mapped[int]
    state: Mapped[str | None] = mapped_column(String(32))
    phys_state: Mapped[str | None] = mapped_column(String(32))
    rate_gbps: Mapped[float | None] = mapped_column(Float)
    link_layer: Mapped[str | None] = mapped_column(String(32))
    counters: Mapped[dict[str, Any]]  # the port's counters, as judged and shown
    # no hw_counters (0033): the driver's own counters were stored and never read; the
    # agent's /metrics has them
