"""Which job held which GPU, and when (migration 0018): one row per (host, GPU,
job), widened by every report that names the job. Imported by `app.models`.

A span rather than a row per report: an inventory pass every 30 s on 8 GPUs would otherwise
add ~23,000 rows a day per host for a fact that changes when a job starts or ends. The span
runs from the first report naming the job to the last (each report's start to its finish),
so a job's true start and end are known to within one probe pass. A Slurm job id is unique
within its cluster (a job requeued keeps its id and extends its span).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from peerwatch.app.store.base import Base, BigId


class GpuJobSpan(Base):
    __tablename__ = "gpu_jobs"
    __table_args__ = (UniqueConstraint("host_id", "gpu", "job"), Index(None, "job"),
                      Index(None, "host_id", "last_seen"))

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    host_id: Mapped[int] = mapped_column(ForeignKey("hosts.id", ondelete="CASCADE"))
    gpu: Mapped[int]
    job: Mapped[str] = mapped_column(String(128))
    source: Mapped[str] = mapped_column(String(16))  # mapping_dir | kubernetes
    first_seen: Mapped[datetime]
    last_seen: Mapped[datetime]
