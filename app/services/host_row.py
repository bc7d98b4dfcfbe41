"""The host row of an ingest: read and locked in one core SELECT, written in one UPDATE.

Every report touches its host's row (when it was received, the newest report's time, the
clock skew, the stamps that let an unchanged judgement be skipped). An ORM `Host` object
for that cost a full-row load, attribute instrumentation and a flush; the ingest path reads
the few columns it decides by into a plain `HostState` and writes what it decided in one
statement (`write_host`). Creating a new host is one INSERT; two replicas creating the same
host at once collide on the unique name and the loser retries (app/services/ingest.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Table, insert, select, update
from sqlalchemy.orm import Session

from app.models import Host
from probes.report import HostIdentity

HOSTS: Table = Host.__table__  # type: ignore[assignment]


@dataclass
class HostState:
    """What ingest decides by: the host's id and name, the newest report's finish so far,
    the newest sweep's, and whether its inventory was ever stamped."""

    id: int
    name: str
    last_report_at: datetime | None
    last_sweep_at: datetime | None
    inventory_stamped: bool


def lock_host(session: Session, identity: HostIdentity, at: datetime) -> HostState:
    """The host's row, locked until commit (PostgreSQL: FOR NO KEY UPDATE): two replicas
    ingesting reports of one host at once take turns, so neither writes its inventory over
    rows it did not see. A host never seen is created, first seen `at`."""
    c = HOSTS.c
    found = session.execute(
        select(c.id, c.last_report_at, c.last_sweep_at, c.inventory_changed_at)
        .where(c.name == identity.hostname).with_for_update(key_share=True)).first()
    if found is not None:
        return HostState(found.id, identity.hostname, found.last_report_at, found.last_sweep_at,
                         found.inventory_changed_at is not None)
    host_id: int = session.execute(insert(HOSTS).returning(c.id), {
        "name": identity.hostname, "fabric": identity.fabric, "first_seen": at,
        "refused_reports": 0}).scalar_one()
    return HostState(host_id, identity.hostname, None, None, False)


def is_newest(host: HostState, finished_at: datetime) -> bool:
    """A report as new as any stored: its inventory is the host's shape now."""
    return host.last_report_at is None or finished_at >= host.last_report_at


def identity_columns(identity: HostIdentity) -> dict[str, Any]:
    """The host's identity columns, as the newest report gives them."""
    return {"fabric": identity.fabric, "driver_version": identity.driver_version,
            "cuda_version": identity.cuda_version, "probe_version": identity.probe_version}


def write_host(session: Session, host: HostState, values: dict[str, Any]) -> None:
    """One UPDATE of the host's row with `values` (column -> value)."""
    session.execute(update(HOSTS).where(HOSTS.c.id == host.id).values(**values))
