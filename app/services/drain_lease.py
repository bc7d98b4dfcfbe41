"""Take, renew and give back the drain lease of a scheduler: one controller acts, the others
observe (docs/drain.md). A lease is taken only when it is free, lapsed, or the asker's own;
the check and the write are one conditional UPDATE (or an INSERT that loses to a concurrent
one on the primary key), so two controllers asking at once never both get it.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import case, delete, or_, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from peerwatch.app.queries.drain_lease import lease_out
from peerwatch.app.schemas.drain import LeaseIn, LeaseOut, LeaseRelease
from peerwatch.app.store.tables.drain_lease import DrainLease


def _renew(session: Session, body: LeaseIn, now: datetime, until: datetime) -> bool:
    """The asker's own lease renewed, or a lapsed one taken over; False when another holds it
    (or no row exists yet)."""
    row = DrainLease.__table__.c
    done = session.execute(
        update(DrainLease)
        .where(row.scheduler == body.scheduler,
               or_(row.holder == body.holder, row.expires_at <= now))
        .values(holder=body.holder, expires_at=until,
                # a takeover starts a new tenure; the holder's renewal keeps its start
                acquired_at=case((row.holder == body.holder, row.acquired_at), else_=now))
        .execution_options(synchronize_session=False))
    return bool(done.rowcount)  # type: ignore[attr-defined]


def take_lease(session: Session, body: LeaseIn, now: datetime) -> LeaseOut:
    until = now + timedelta(seconds=body.ttl_s)
    if not _renew(session, body, now, until):
        try:
            with session.begin_nested():
                session.add(DrainLease(scheduler=body.scheduler, holder=body.holder,
                                       acquired_at=now, expires_at=until))
        except IntegrityError:
            pass  # a row exists (held by another, or just taken by one): read who holds it
    session.commit()
    return lease_out(session, body.scheduler, now, asker=body.holder)


def release_lease(session: Session, body: LeaseRelease, now: datetime) -> LeaseOut:
    """A controller that stops gives its lease back, so another acts at once, not after the
    ttl; another holder's lease is left as it is."""
    session.execute(delete(DrainLease).where(DrainLease.scheduler == body.scheduler,
                                             DrainLease.holder == body.holder))
    session.commit()
    return lease_out(session, body.scheduler, now, asker=body.holder)
