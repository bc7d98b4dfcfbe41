"""The host row of an ingest: read and locked in one core SELECT, written in one UPDATE.

Every report touches its host's row (when it was received, the newest report's time, the
clock skew, the stamps that let an unchanged judgement be skipped). An ORM `Host` object
for that cost a full-row load, attribute instrumentation and a flush; the ingest path reads
the few columns it decides by into a plain `HostState` and writes what it decided in one
statement (`write_host`). Creating a new host is one INSERT; two replicas creating the same
host at once collide on the unique name and the loser retries (app/ingest/rows.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Table, Update, bindparam, insert, select, update
from sqlalchemy.orm import Session

from peerwatch.app.store.tables.inventory import Host
from peerwatch.probes.report import HostIdentity

HOSTS: Table = Host.__table__  # type: ignore[assignment]
# built once (a statement's construction cost more than its execution); the UPDATEs are
# kept by the set of columns they write, of which a host's reports use a handful
LOCK = (select(HOSTS.c.id, HOSTS.c.last_report_at, HOSTS.c.last_sweep_at,
               HOSTS.c.inventory_changed_at)
        .where(HOSTS.c.name == bindparam("name")).with_for_update(key_share=True))
CREATE = insert(HOSTS).returning(HOSTS.c.id)
_UPDATES: dict[frozenset[str], Update] = {}


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
    found = session.execute(LOCK, {"name": identity.hostname}).first()
    if found is not None:
        return HostState(found.id, identity.hostname, found.last_report_at, found.last_sweep_at,
                         found.inventory_changed_at is not None)
    host_id: int = session.execute(CREATE, {
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
    columns = frozenset(values)
    stmt = _UPDATES.get(columns)
    if stmt is None:
        stmt = _UPDATES[columns] = update(HOSTS).where(HOSTS.c.id == bindparam("host_id")) \
            .values({c: bindparam(f"new_{c}") for c in sorted(columns)})
    session.execute(stmt, {"host_id": host.id, **{f"new_{c}": v for c, v in values.items()}})
