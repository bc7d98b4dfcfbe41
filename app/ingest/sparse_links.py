"""Which NVLink counter rows a report writes: a port's reading only when one of its error
counters moved since its previous reading, and every port at a keyframe (LINK_KEYFRAME_S).

An 8-GPU host reads 144 ports every 30 s and a healthy port's error counters never move:
storing each reading was 73 % of a host's bytes. A reading left out equals, in every error
counter, the port's stored row before it, so the growth of an error counter over any
window is unchanged (`app/queries/counters.py` reaches back a keyframe for each port's
value at the window's start and spans the rates over the host's readings). The tx/rx byte
counters ride along in the rows that are stored: their series is as fine as the keyframes
(the agent's `/metrics` has them at every scrape, for a time-series store).

What a port read last comes from this process's memo (`InventoryMemo.links`), trusted only
while the host still shows the `last_report_at` this process set: anything else (another
worker or replica stored a report since, a restart, a report older than the newest) writes
every port, which is always correct, only bigger.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from peerwatch.app.ingest.host_row import HostState
from peerwatch.app.ingest.inventory import LINKS_PENDING_KEY
from peerwatch.app.store.inventory_memo import MEMO_KEY, InventoryMemo, LinkReadings
from peerwatch.app.store.tables.history import LINK_KEYFRAME_S

ERRORS = ("replay", "recovery", "crc_flit", "crc_data", "ecc_data")


def sparse_link_rows(session: Session, host: HostState, rows: list[dict[str, Any]],
                     finished_at: datetime, newest: bool) -> list[dict[str, Any]]:
    """The rows of `rows` (a report's link rows, its samples in order) worth writing; the
    host's readings after them are remembered once the transaction commits."""
    memo: InventoryMemo | None = session.info.get(MEMO_KEY)
    if memo is None or not newest or not rows:
        return rows
    readings = memo.links(host)
    kept: list[dict[str, Any]] = []
    for at, sample in _by_sample(rows):
        errors = {(r["gpu"], r["link"]): tuple(r[c] for c in ERRORS) for r in sample}
        if _keyframe_due(readings, at):
            kept += sample
            readings = LinkReadings(errors, at, keyframe_at=at)
            continue
        assert readings is not None  # a keyframe is due without readings
        kept += [r for r in sample
                 if readings.errors.get((r["gpu"], r["link"])) != errors[(r["gpu"], r["link"])]]
        readings = LinkReadings({**readings.errors, **errors}, at, readings.keyframe_at)
    session.info[LINKS_PENDING_KEY] = (host.id, readings, finished_at)
    return kept


def _keyframe_due(readings: LinkReadings | None, at: datetime) -> bool:
    """Every port is written: nothing trusted known before, a reading before the last one
    (a repeat at the same time, as a sweep's two samples of a quick pass, is compared), or
    the last keyframe LINK_KEYFRAME_S or more before."""
    return (readings is None or at < readings.at
            or (at - readings.keyframe_at).total_seconds() >= LINK_KEYFRAME_S)


def _by_sample(rows: list[dict[str, Any]]) -> list[tuple[datetime, list[dict[str, Any]]]]:
    """The rows grouped by reading, in order (a report's samples follow one another)."""
    groups: list[tuple[datetime, list[dict[str, Any]]]] = []
    for row in rows:
        if groups and groups[-1][0] == row["at"]:
            groups[-1][1].append(row)
        else:
            groups.append((row["at"], [row]))
    return groups
