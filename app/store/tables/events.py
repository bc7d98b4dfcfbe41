"""The `fabric_events` table (migration 0016): every Xid/SXid event a report carried.

Stored with its report (same transaction), so an event is kept whole with the report or not
at all; retention deletes events as old as the reports it prunes (migration 0029: no cascade
from `reports`, which PostgreSQL drops a month at a time). The catalog's meaning is not
stored: it is looked up when judged or shown (`app/analysis/xid_catalog.py`), so a catalog
update re-reads old events rightly.
Imported by `app.models`.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from peerwatch.app.store.base import Base, BigId


class FabricEventRow(Base):
    __tablename__ = "fabric_events"
    __table_args__ = (Index(None, "host_id", "at"), Index(None, "at"))

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    report_id: Mapped[int] = mapped_column(BigId, index=True)
    host_id: Mapped[int] = mapped_column(ForeignKey("hosts.id", ondelete="CASCADE"))
    at: Mapped[datetime]
    kind: Mapped[str] = mapped_column(String(8))  # xid | sxid
    code: Mapped[int]
    gpu: Mapped[int | None]
    link: Mapped[int | None]
    switch: Mapped[str | None] = mapped_column(String(32))
    pci_bus_id: Mapped[str | None] = mapped_column(String(32))
    subcode: Mapped[int | None]
    fatal: Mapped[bool | None]
    count: Mapped[int]
    sources: Mapped[str] = mapped_column(String(64))  # "kmsg,nvml"
    message: Mapped[str] = mapped_column(Text)
