"""Read a host's stored Xid/SXid events: as facts for judging, as rows for the host page."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session

from peerwatch.app.analysis.xid_catalog import CATALOG_VERSION, lookup
from peerwatch.app.analysis.xid_judge import LOOKBACK_S, EventFact
from peerwatch.app.queries.common import get_host
from peerwatch.app.store.tables.events import FabricEventRow

MAX_LISTED = 500  # events one host page lists (newest first)


# every judgement's read of a host's events, built once (building it cost more than its answer)
_FACTS = select(FabricEventRow.kind, FabricEventRow.code, FabricEventRow.at, FabricEventRow.gpu,
                FabricEventRow.link, FabricEventRow.switch, FabricEventRow.subcode,
                FabricEventRow.fatal, FabricEventRow.count).where(
    FabricEventRow.host_id == bindparam("host"), FabricEventRow.at >= bindparam("since")
).order_by(FabricEventRow.at)


def event_facts(session: Session, host_id: int, since: datetime) -> list[EventFact]:
    rows = session.execute(_FACTS, {"host": host_id, "since": since})
    return [EventFact(*row) for row in rows]


def load_event_facts(session: Session, host_id: int, now: datetime) -> list[EventFact]:
    """The facts one judgement at `now` reads: the events of the judge's lookback window."""
    return event_facts(session, host_id, now - timedelta(seconds=LOOKBACK_S))


def event_list(session: Session, host_id: int, since: datetime,
               until: datetime | None = None) -> list[dict[str, Any]]:
    """The host page's timeline: each event with what the catalog says about it."""
    query = select(FabricEventRow).where(FabricEventRow.host_id == host_id,
                                         FabricEventRow.at >= since)
    if until is not None:
        query = query.where(FabricEventRow.at <= until)
    rows = session.scalars(query.order_by(FabricEventRow.at.desc()).limit(MAX_LISTED))
    out = []
    for r in rows:
        entry = lookup(r.kind, r.code, r.fatal, r.subcode)
        out.append({
            "at": r.at, "kind": r.kind, "code": r.code, "label": entry.label,
            "gpu": r.gpu, "link": r.link, "switch": r.switch, "count": r.count,
            "subcode": r.subcode, "fatal": r.fatal, "sources": r.sources.split(","),
            "message": r.message, "meaning": entry.name, "object": entry.object,
            "severity": entry.severity, "action": entry.action, "source": entry.source,
            "catalog_version": entry.version,
        })
    return out


def host_events(session: Session, name: str, since: datetime | None,
                until: datetime | None, now: datetime) -> dict[str, Any]:
    """GET /api/v1/hosts/{host}/events: the host's events (default: the last 24 h) and the
    catalog version they were read with (404 for an unknown host, from `get_host`)."""
    host = get_host(session, name)
    start = since or (until or now) - timedelta(hours=24)
    return {"host": host.name, "generated_at": now, "catalog_version": CATALOG_VERSION,
            "events": event_list(session, host.id, start, until)}
