"""Declare and end maintenance windows (the admin API's writes)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.orm import Session

from peerwatch.app.queries.common import NotFound
from peerwatch.app.schemas.maintenance import MaintenanceRequest
from peerwatch.app.store.tables.alerts import MaintenanceWindow


def declare_window(session: Session, body: MaintenanceRequest, now: datetime
                   ) -> MaintenanceWindow:
    starts, ends = body.span(now)  # ValueError when the end is not after the start
    window = MaintenanceWindow(host=body.host, starts_at=starts, ends_at=ends,
                               created_by=body.created_by, comment=body.comment, created_at=now)
    session.add(window)
    session.commit()
    return window


def end_window(session: Session, window_id: int, now: datetime) -> MaintenanceWindow:
    """End the window now (a future one is ended where it starts); ended ones stay listed."""
    window = session.get(MaintenanceWindow, window_id)
    if window is None:
        raise NotFound("maintenance window", window_id)
    if window.ends_at > now:
        window.ends_at = max(now, window.starts_at)
        session.commit()
    return window
