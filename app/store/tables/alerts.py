"""Alerts, their history, silences and maintenance windows."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    Float,
    ForeignKey,
    Index,
    String,
    Text,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from peerwatch.app.store.base import Base, BigId

# the states of an alert that is still on: every reader and writer of active alerts
ACTIVE_STATES = ("pending", "firing")


class Alert(Base):
    """One alert instance (a rule firing for one label set) from pending to resolved."""

    __tablename__ = "alerts"
    __table_args__ = (
        Index(None, "fingerprint", "state"),
        Index(None, "host", "state"),
        # At most one pending-or-firing row per fingerprint, whatever replica writes it.
        Index("uq_alerts_active_fingerprint", "fingerprint", unique=True,
              postgresql_where=text("state IN ('pending', 'firing')"),
              sqlite_where=text("state IN ('pending', 'firing')")),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    rule: Mapped[str] = mapped_column(String(128))
    fingerprint: Mapped[str] = mapped_column(String(64))
    host: Mapped[str | None] = mapped_column(String(253))
    labels: Mapped[dict[str, Any]]
    annotations: Mapped[dict[str, Any]]
    state: Mapped[str] = mapped_column(String(16))  # pending | firing | resolved
    active_since: Mapped[datetime]
    fired_at: Mapped[datetime | None]
    resolved_at: Mapped[datetime | None]
    value: Mapped[float | None] = mapped_column(Float)
    updated_at: Mapped[datetime]
    # migration 0002 (alerting): acknowledgement and what Alertmanager was last told
    acked_by: Mapped[str | None] = mapped_column(String(128))
    acked_at: Mapped[datetime | None]
    notified_state: Mapped[str | None] = mapped_column(String(16))  # firing | resolved
    notified_at: Mapped[datetime | None]


class AlertEvent(Base):
    __tablename__ = "alert_events"

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    alert_id: Mapped[int] = mapped_column(
        ForeignKey("alerts.id", ondelete="CASCADE"), index=True
    )
    state: Mapped[str] = mapped_column(String(16))
    at: Mapped[datetime]
    value: Mapped[float | None] = mapped_column(Float)
    message: Mapped[str | None] = mapped_column(Text)


class Silence(Base):
    __tablename__ = "silences"
    __table_args__ = (Index(None, "ends_at"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    matchers: Mapped[list[Any]]  # [{"name", "value", "is_regex", "is_equal"}]
    created_by: Mapped[str] = mapped_column(String(128))
    comment: Mapped[str] = mapped_column(Text)
    starts_at: Mapped[datetime]
    ends_at: Mapped[datetime]
    created_at: Mapped[datetime]


class MaintenanceWindow(Base):
    """A declared maintenance window of one host: no pages between `starts_at` and `ends_at`."""

    __tablename__ = "maintenance_windows"
    __table_args__ = (Index(None, "host", "ends_at"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    host: Mapped[str] = mapped_column(String(253))
    starts_at: Mapped[datetime]
    ends_at: Mapped[datetime]
    created_by: Mapped[str] = mapped_column(String(128))
    comment: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime]
