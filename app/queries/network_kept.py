"""The fleet's network judgement kept between reads, judged again only when what it reads
changed: `GET /api/v1/network/pairs?host=` answers one host's share of a judgement that
needs every pair (triangulation), and each open host page polls it.

What the judgement reads (`network.network_judgement`): the map, the pair results measured
within `WINDOW` of now, the floors. The kept one stands while all three read the same, each
known by a stamp (two aggregate selects, no rows read):

- the results: how many are in the window, the newest id and the newest arrival. A stored
  result raises the newest id and arrival (ids only grow; the arrival also where SQLite
  gives a deleted newest row's id again), one aged out of the window (or deleted) lowers
  the count; rows are never updated in place;
- the map: how many hosts and when it was last written (`services/network.py`
  `replace_map` writes every row, stamped with its time, whenever it is put);
- the floors: compared whole (a few numbers of the settings).

The stamps are the database's, not this process's: a result another replica stored, or a
probe's report carried, is seen at the next read like one posted here. They are read before
the rows, so a write committed in between is judged now and moves a stamp for the next
read: a kept judgement is never older than its stamps.
"""

from __future__ import annotations

import threading
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from peerwatch.app.analysis.network import Floors, NetworkJudgement, Place
from peerwatch.app.queries.network import WINDOW, floors, network_judgement
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.tables.network import HostPairResult, NetworkHost

Stamp = tuple[int, Any, Any]  # how many rows, and two of their newest values


def results_stamp(session: Session, now: datetime, test: str | None = None) -> Stamp:
    """What identifies the pair results a judgement at `now` reads (module docstring)."""
    query = (select(func.count(), func.max(HostPairResult.id),
                    func.max(HostPairResult.received_at))
             .where(HostPairResult.measured_at >= now - WINDOW))
    if test is not None:
        query = query.where(HostPairResult.test == test)
    count, newest, arrived = session.execute(query).one()
    return int(count), newest, arrived


def map_stamp(session: Session) -> Stamp:
    """What identifies the network map: its hosts and when it was last put."""
    count, written = session.execute(
        select(func.count(), func.max(NetworkHost.updated_at))).one()
    return int(count), written, None


Key = tuple[Stamp, Stamp, Floors]
Kept = tuple[Key, NetworkJudgement, dict[str, Place]]


class KeptJudgements:
    """One kept judgement (and the map it was judged on) per test filter (None: every
    test). Shared by the request threads: what it hands out is read, never changed. One
    judges at a time, so readers that arrive together wait for one judgement rather than
    each making their own."""

    def __init__(self) -> None:
        self._kept: dict[str | None, Kept] = {}
        self._lock = threading.Lock()
        self.judged = 0  # judgements made (the rest were kept ones): tests and benches

    def judgement(self, session: Session, settings: Settings, now: datetime,
                  test: str | None = None) -> tuple[NetworkJudgement, dict[str, Place]]:
        """`network_judgement(session, settings, now, test)`, kept while its inputs are."""
        with self._lock:
            key: Key = (results_stamp(session, now, test), map_stamp(session),
                        floors(settings))
            kept = self._kept.get(test)
            if kept is not None and kept[0] == key:
                return kept[1], kept[2]
            judgement, where = network_judgement(session, settings, now, test)
            self._kept[test] = (key, judgement, where)
            self.judged += 1
            return judgement, where


def kept_judgements_for(app: Any) -> KeptJudgements:
    """The app's kept network judgements (made with the app by `app.main.create_app`)."""
    kept: KeptJudgements = app.state.network_judgements
    return kept
