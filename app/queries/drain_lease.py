"""Who holds a scheduler's drain lease now (`GET /api/v1/drain/state`'s `lease`)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.orm import Session

from peerwatch.app.schemas.drain import LeaseOut
from peerwatch.app.store.tables.drain_lease import DrainLease


def lease_out(session: Session, scheduler: str, now: datetime,
              asker: str | None = None) -> LeaseOut:
    """The live lease (a lapsed one is shown as none held); `held`: the asker holds it."""
    row = session.get(DrainLease, scheduler, populate_existing=True)
    if row is None or row.expires_at <= now:
        return LeaseOut(scheduler=scheduler, holder=None, held=False, acquired_at=None,
                        expires_at=None)
    return LeaseOut(scheduler=scheduler, holder=row.holder, held=row.holder == asker,
                    acquired_at=row.acquired_at, expires_at=row.expires_at)
