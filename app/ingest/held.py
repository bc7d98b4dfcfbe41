"""Which full report of each host this server process holds the state of: what a heartbeat
(`probes/heartbeat.py`, `app/routes/heartbeats.py`) is checked against.

A heartbeat says "my host is as my full report X said". The server's stored inventory is the
newest of the host's full reports, so all it must know is whether X reached it: the POST of
each full report notes its id here (`noted`), in memory, by host (a few ids each, so a
spooled report replayed late does not push the newest out). A process that did not see X
(restarted, another replica) asks the database once (`stored_for`: X among the host's
stored or waiting reports) and notes it; a database that lost the host (wiped, or its rows
pruned: `HeardBook.flush` finds the host row gone and the host is forgotten here too) holds
no X, and the heartbeat is answered 409: the agent sends a full report, so nothing is judged
from a partial picture. A lookup is a dict read under a lock: a heartbeat's whole server
cost is well under a millisecond.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from peerwatch.app.ingest.heard import MAX_HOSTS
from peerwatch.app.store.tables.history import ReportRow
from peerwatch.app.store.tables.inventory import Host
from peerwatch.app.store.tables.received import ReceivedReport

IDS_PER_HOST = 4  # the newest full reports of a host noted (a late replay leaves three)
# A host's first full report is answered before its rows (its host row too) are written
# (`serve`: app/ingest/expand.py): a host noted this recently is not taken for one the
# database lost. (bench/storage.py at load 9: 3 of 4 new hosts were asked again without it.)
GRACE_S = 60.0


class HeldReports:
    """Host -> the ids of its full reports this process stored (newest last)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._lock = threading.Lock()
        self._ids: dict[str, list[uuid.UUID]] = {}
        self._noted_at: dict[str, float] = {}
        self.clock = clock

    def noted(self, host: str, report_id: uuid.UUID) -> None:
        """`host`'s full report `report_id` is stored (or was, a duplicate)."""
        with self._lock:
            ids = self._ids.get(host)
            if ids is None:
                if len(self._ids) >= MAX_HOSTS:
                    return  # bounded: a host not held is asked for a full report, no harm
                ids = self._ids[host] = []
            if report_id in ids:
                ids.remove(report_id)
            ids.append(report_id)
            del ids[:-IDS_PER_HOST]
            self._noted_at[host] = self.clock()

    def holds(self, host: str, report_id: uuid.UUID) -> bool:
        with self._lock:
            return report_id in self._ids.get(host, ())

    def forget(self, hosts: Iterable[str]) -> None:
        """These hosts' rows are gone from the database: ask their agents for full reports
        (a host noted within GRACE_S: its rows may not be written yet, it is kept)."""
        with self._lock:
            before = self.clock() - GRACE_S
            for host in hosts:
                if self._noted_at.get(host, before) <= before:
                    self._ids.pop(host, None)
                    self._noted_at.pop(host, None)

    def __len__(self) -> int:
        return len(self._ids)


def stored_for(session: Session, host: str, report_id: uuid.UUID) -> bool:
    """Does the database hold `host`'s report `report_id` (stored, or received whole and
    waiting for its rows)? What a process that did not see the report itself (restarted,
    another replica behind the same load balancer) asks once, by the unique report_id."""
    stored = (select(ReportRow.id).join(Host, Host.id == ReportRow.host_id)
              .where(ReportRow.report_id == report_id, Host.name == host))
    waiting = select(ReceivedReport.id).where(ReceivedReport.report_id == report_id,
                                              ReceivedReport.host == host)
    return session.execute(stored.union_all(waiting).limit(1)).first() is not None


def held_for(app: Any) -> HeldReports:
    """The app's book (made by `app.main.create_app`)."""
    book: HeldReports = app.state.held
    return book
