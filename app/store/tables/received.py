"""Reports received and answered but not yet expanded into rows (migration 0023).

Under `serve`, `POST /api/v1/reports` answers once the report is checked and its body is
stored here in one INSERT (`app/ingest/received.py`); an ingest worker then expands it
into the report, measurement and sample rows and deletes this row in the same transaction,
so a report is in exactly one of the two places. A row that outlives its expansion (the
worker died, the server stopped) is expanded from its stored body by the recovery job.
Imported by `app.models`.

`report_id` is unique, as in `reports`: a retry while the first copy waits here is a
duplicate. `body` is the body as posted (`encoding`: its Content-Encoding, gzip or none).
"""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import Index, LargeBinary, String, Uuid
from sqlalchemy.orm import Mapped, mapped_column

from peerwatch.app.store.base import Base, BigId


class ReceivedReport(Base):
    __tablename__ = "received_reports"
    __table_args__ = (Index(None, "received_at"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    report_id: Mapped[uuid.UUID] = mapped_column(Uuid, unique=True)
    host: Mapped[str] = mapped_column(String(253))
    digest: Mapped[str] = mapped_column(String(64))  # as `reports.digest`: retry vs reuse
    received_at: Mapped[datetime]
    sent_at: Mapped[datetime | None]  # the probe's send time clock skew is read against
    canonical: Mapped[bool]  # the body is this server's canonical JSON (its digest is its own)
    encoding: Mapped[str | None] = mapped_column(String(16))
    body: Mapped[bytes] = mapped_column(LargeBinary)
    attempts: Mapped[int] = mapped_column(default=0)  # failed expansions, by the recovery job
