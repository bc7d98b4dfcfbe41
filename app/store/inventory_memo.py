"""The inventory memo every session of one app shares (`session.info[MEMO_KEY]`): what
ingest (`app/ingest/inventory.py`) may skip writing. Here, beside the sessions, so the
sessionmaker that holds it needs nothing above the store.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

MEMO_KEY = "peerwatch.inventory_memo"


class Stamped(Protocol):
    """What the memo reads of a host (ingest's `HostState`)."""

    id: int
    last_report_at: datetime | None


class InventoryMemo:
    """What this process last committed as each host's inventory: its fingerprint and the
    host's `last_report_at` it set. If the host still shows that `last_report_at`, no report
    has rewritten the inventory since (every rewrite moves it, whichever replica made it),
    so an unchanged inventory writes no inventory row. One per app, put in
    `session.info[MEMO_KEY]` by the sessionmaker; sessions without one always compare."""

    def __init__(self) -> None:
        self._stored: dict[int, tuple[bytes, datetime]] = {}

    def unchanged(self, host: Stamped, fingerprint: bytes) -> bool:
        return (host.last_report_at is not None
                and self._stored.get(host.id) == (fingerprint, host.last_report_at))

    def remember(self, host_id: int, fingerprint: bytes, version: datetime) -> None:
        self._stored[host_id] = (fingerprint, version)
