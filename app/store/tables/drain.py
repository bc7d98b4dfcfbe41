"""Tables of `peerwatch drain` (migration 0015): what it did, what it owns, its breaker.

Kept on the server, not in the controller, so that a restarted controller, or another one,
knows which nodes peerwatch took out (and may put back), how many it took out lately, and
whether a person still has to reset the breaker. Imported by `app.models`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Boolean, Index, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from peerwatch.app.store.base import Base, BigId


class DrainAction(Base):
    """One thing the controller did or, in observe mode, would have done; append-only."""

    __tablename__ = "drain_actions"
    __table_args__ = (Index(None, "host", "at"), Index(None, "scheduler", "kind", "at"))

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    at: Mapped[datetime]
    host: Mapped[str | None] = mapped_column(String(253))  # None: the breaker's own actions
    scheduler: Mapped[str] = mapped_column(String(32))
    kind: Mapped[str] = mapped_column(String(32))  # take_out, return, breaker_trip, ...
    mode: Mapped[str] = mapped_column(String(16))  # act | observe
    reason: Mapped[str] = mapped_column(Text)
    actor: Mapped[str] = mapped_column(String(128))  # who: controller@host, a person
    details: Mapped[dict[str, Any]]


class DrainMark(Base):
    """peerwatch took this node out of this scheduler (`applied`: for real, not observe)."""

    __tablename__ = "drain_marks"
    __table_args__ = (UniqueConstraint("scheduler", "host"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    scheduler: Mapped[str] = mapped_column(String(32))
    host: Mapped[str] = mapped_column(String(253))
    taken_out_at: Mapped[datetime]
    reason: Mapped[str] = mapped_column(Text)
    applied: Mapped[bool] = mapped_column(Boolean)
    clear_since: Mapped[datetime | None]
    action_id: Mapped[int | None]


class DrainBreaker(Base):
    """The circuit breaker of one scheduler; a row exists from peerwatch's first action on
    that scheduler (migration 0025), so a server that has none while the scheduler shows
    nodes out by peerwatch knows its drain state was lost."""

    __tablename__ = "drain_breakers"

    scheduler: Mapped[str] = mapped_column(String(32), primary_key=True)
    open: Mapped[bool] = mapped_column(Boolean)
    mode: Mapped[str] = mapped_column(String(16))
    opened_at: Mapped[datetime | None]
    reason: Mapped[str] = mapped_column(Text)
    reset_by: Mapped[str | None] = mapped_column(String(128))
    reset_at: Mapped[datetime | None]
    cause: Mapped[str | None] = mapped_column(String(32))  # "limit" | "state_lost"
