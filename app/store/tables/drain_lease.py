"""The lease of `peerwatch drain` on a scheduler that has none of its own (Slurm; migration
0024): one row per scheduler, the controller that acts and until when. The others observe.
Kubernetes keeps its lease in the cluster (a coordination.k8s.io Lease), not here.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import String
from sqlalchemy.orm import Mapped, mapped_column

from peerwatch.app.store.base import Base


class DrainLease(Base):
    __tablename__ = "drain_leases"

    scheduler: Mapped[str] = mapped_column(String(32), primary_key=True)
    holder: Mapped[str] = mapped_column(String(128))  # host:pid of the acting controller
    acquired_at: Mapped[datetime]  # when this holder took it (renewals keep it)
    expires_at: Mapped[datetime]  # no renewal by then: another controller may take it
