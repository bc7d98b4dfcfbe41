"""The inventory memo every session of one app shares (`session.info[MEMO_KEY]`): what
ingest (`app/ingest/inventory.py`) may skip writing. Here, beside the sessions, so the
sessionmaker that holds it needs nothing above the store.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

MEMO_KEY = "peerwatch.inventory_memo"


class Stamped(Protocol):
    """What the memo reads of a host (ingest's `HostState`)."""

    id: int
    last_report_at: datetime | None


Port = tuple[int, int]  # (gpu, link)


Errors = tuple[int | None, ...]  # a port's error counters, in `sparse_links.ERRORS` order
Traffic = tuple[int | None, ...]  # its tx/rx byte counters, in `sparse_links.TRAFFIC` order
NicKey = tuple[str, int]  # (device, port)


@dataclass(frozen=True)
class LinkReadings:
    """What a host's NVLink ports' newest stored rows read (`app/ingest/sparse_links.py`):
    each port's error and tx/rx counters in its newest row, and that row's time (a rate
    query reaches back to it)."""

    ports: dict[Port, tuple[Errors, Traffic, datetime]]


@dataclass(frozen=True)
class NicSnapshot:
    """A host's newest stored RDMA port reading (`app/ingest/sparse_nics.py`): every port's
    values then, and its time."""

    ports: dict[NicKey, tuple[object, ...]]
    at: datetime


class InventoryMemo:
    """What this process last committed as each host's inventory: its fingerprint and the
    host's `last_report_at` it set. If the host still shows that `last_report_at`, no report
    has rewritten the inventory since (every rewrite moves it, whichever replica made it),
    so an unchanged inventory writes no inventory row. One per app, put in
    `session.info[MEMO_KEY]` by the sessionmaker; sessions without one always compare."""

    def __init__(self) -> None:
        self._stored: dict[int, tuple[bytes, datetime]] = {}
        self._links: dict[int, tuple[LinkReadings, datetime]] = {}
        self._nics: dict[int, tuple[NicSnapshot, datetime]] = {}

    def unchanged(self, host: Stamped, fingerprint: bytes) -> bool:
        return (host.last_report_at is not None
                and self._stored.get(host.id) == (fingerprint, host.last_report_at))

    def remember(self, host_id: int, fingerprint: bytes, version: datetime) -> None:
        self._stored[host_id] = (fingerprint, version)

    def links(self, host: Stamped) -> LinkReadings | None:
        """The host's newest link readings, if this process stored them last (the host
        still shows the `last_report_at` it set): else None, and every port is written."""
        kept = self._links.get(host.id)
        if kept is None or host.last_report_at is None or kept[1] != host.last_report_at:
            return None
        return kept[0]

    def remember_links(self, host_id: int, readings: LinkReadings, version: datetime) -> None:
        self._links[host_id] = (readings, version)

    def nics(self, host: Stamped) -> NicSnapshot | None:
        """The host's newest stored NIC reading, on the same terms as `links`."""
        kept = self._nics.get(host.id)
        if kept is None or host.last_report_at is None or kept[1] != host.last_report_at:
            return None
        return kept[0]

    def remember_nics(self, host_id: int, snapshot: NicSnapshot, version: datetime) -> None:
        self._nics[host_id] = (snapshot, version)
