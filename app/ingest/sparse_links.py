"""Which NVLink counter rows a report writes: a port's reading only when one of its error
counters moved since its reading before, or when its newest row is LINK_KEYFRAME_S old.

An 8-GPU host reads 144 ports every 30 s and a healthy port's error counters never move:
storing each reading was 73 % of a host's bytes. A reading left out equals, in every error
counter, the port's stored row before it, so the growth of an error counter over any
window is unchanged, and every port has a row at most LINK_KEYFRAME_S before any reading
(`app/queries/counters.py` reaches back that far for each port's value at a window's start
and spans the rates over the host's readings). The tx/rx byte counters ride along in the
rows that are written: their series is as fine as those rows (the agent's `/metrics` has
them at every scrape, for a time-series store).

What each port read last comes from this process's memo (`InventoryMemo.links`), trusted
only while the host still shows the `last_report_at` this process set; otherwise (another
worker or replica stored the report before, a restart) from the host's rows of the last
LINK_KEYFRAME_S, one indexed range read. A report older than the host's newest writes
every port.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from peerwatch.app.ingest.host_row import HostState
from peerwatch.app.ingest.inventory import LINKS_PENDING_KEY
from peerwatch.app.store.inventory_memo import MEMO_KEY, Errors, InventoryMemo, LinkReadings, Port
from peerwatch.app.store.tables.history import LINK_KEYFRAME_S, LinkSample

ERRORS = ("replay", "recovery", "crc_flit", "crc_data", "ecc_data")
KEYFRAME = timedelta(seconds=LINK_KEYFRAME_S)


def sparse_link_rows(session: Session, host: HostState, rows: list[dict[str, Any]],
                     finished_at: datetime, newest: bool) -> list[dict[str, Any]]:
    """The rows of `rows` (a report's link rows, its samples in order) worth writing; what
    the ports read after them is remembered once the transaction commits."""
    if not newest or not rows:
        return rows
    memo: InventoryMemo | None = session.info.get(MEMO_KEY)
    known = memo.links(host) if memo is not None else None
    ports = dict(known.ports) if known is not None else stored_ports(session, host.id,
                                                                     rows[0]["at"])
    kept = []
    for row in rows:
        port, errors, at = (row["gpu"], row["link"]), _errors(row), row["at"]
        last = ports.get(port)
        if last is None or last[0] != errors or not last[1] <= at < last[1] + KEYFRAME:
            kept.append(row)
            ports[port] = (errors, at)
    if memo is not None:
        session.info[LINKS_PENDING_KEY] = (host.id, LinkReadings(ports), finished_at)
    return kept


def stored_ports(session: Session, host_id: int, at: datetime) -> dict[Port, tuple[Errors,
                                                                                  datetime]]:
    """Each port's newest row of the LINK_KEYFRAME_S up to `at` (a port without one is
    written, whatever it reads)."""
    query = (select(LinkSample.gpu, LinkSample.link, LinkSample.at,
                    *(getattr(LinkSample, c) for c in ERRORS))
             .where(LinkSample.host_id == host_id, LinkSample.at > at - KEYFRAME,
                    LinkSample.at <= at)
             .order_by(LinkSample.at, LinkSample.id))
    return {(gpu, link): (tuple(errors), _aware(when))
            for gpu, link, when, *errors in session.execute(query)}


def _errors(row: dict[str, Any]) -> Errors:
    return tuple(row[c] for c in ERRORS)


def _aware(at: datetime) -> datetime:
    """SQLite hands timestamps back naive (they are stored in UTC)."""
    return at if at.tzinfo else at.replace(tzinfo=UTC)
