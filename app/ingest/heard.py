"""What the server heard from each probe before (or instead of) storing it, by host: a
refused probe, or one whose report is still waiting, was heard from.

A saturated server answers before it reads the body, so it cannot know whose report it
refused — unless the probe names its host in a header (`X-Peerwatch-Host`, sent by
`probes/agent/sender.py`). Every request's arrival is noted here in memory at once, before
any wait (a dict update: arriving and refusing must stay cheap), and a refusal is counted;
a report stored since its arrival takes its note back (`stored`: the stored report's
receipt says the same). `HeardBook.flush` writes what is left in one batched UPDATE every
HEARD_FLUSH_S (a background job of the app, and once more at shutdown): `hosts.
last_heard_at` (the newest arrival, migration 0020), `hosts.last_refused_at` and `hosts.
refused_reports` (refused since the host's last stored report; ingest sets it back to 0).

Staleness counts hearing from the probe (`app/store/tables/inventory.py` `last_heard_at`): a report
that takes longer than the staleness limit to be stored under overload, or that its probe
gave up waiting for, leaves a probe that was heard, not a silent one; readers show "not
judged since HH:MM: server busy, N reports refused" (`app/queries/busy.py`) instead of
blaming the probe.

A host row that an ingest holds locked right now is skipped (PostgreSQL: SKIP LOCKED) and
its note kept for the next flush: the flush never waits behind an ingest, nor holds rows an
ingest waits for. A name that is no known host changes nothing (the UPDATE matches no row);
at most MAX_HOSTS names are held between flushes, so a flood of invented names costs bounded
memory.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Table, bindparam, case, select, update
from sqlalchemy.orm import Session, sessionmaker

from peerwatch.app.store.tables.inventory import Host
from peerwatch.probes.report import valid_hostname

log = logging.getLogger(__name__)

HEARD_FLUSH_S = 2.0
MAX_HOSTS = 100_000


@dataclass
class Noted:
    """A host's requests since the last flush: the newest arrival, and the refusals."""

    heard_at: datetime
    refused: int = 0
    refused_at: datetime | None = None

    def merge(self, other: Noted) -> None:
        self.heard_at = max(self.heard_at, other.heard_at)
        self.refused += other.refused
        if other.refused_at is not None:
            self.refused_at = (other.refused_at if self.refused_at is None
                               else max(self.refused_at, other.refused_at))


def _canonical(host: str | None) -> str | None:
    """A header's host in its stored spelling; None for no header or an invalid name."""
    try:
        return valid_hostname(host) if host else None
    except ValueError:
        return None


class HeardBook:
    """What was heard of each host name since the last flush, and not yet stored."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: dict[str, Noted] = {}
        # told the names of a flush that have no host row (a wiped database, a pruned
        # host): `app/ingest/held.py` forgets their state, so their next heartbeat resyncs
        self.on_missing: Callable[[set[str]], None] | None = None

    def heard(self, host: str | None, at: datetime) -> None:
        """A request of `host`'s arrived at `at` (before any wait)."""
        self._add(host, Noted(at))

    def note(self, host: str | None, at: datetime) -> None:
        """Count a refusal of `host`'s report (which arrived at `at`)."""
        self._add(host, Noted(at, 1, at))

    def stored(self, host: str, arrived: datetime) -> None:
        """`host`'s report that arrived at `arrived` is stored (its receipt written with it):
        an arrival noted no later than that says nothing more, unless refusals ride on it."""
        with self._lock:
            noted = self._pending.get(host)
            if noted is not None and not noted.refused and noted.heard_at <= arrived:
                del self._pending[host]

    def _add(self, host: str | None, noted: Noted) -> None:
        name = _canonical(host)
        if name is None:
            return
        with self._lock:
            mine = self._pending.get(name)
            if mine is not None:
                mine.merge(noted)
            elif len(self._pending) < MAX_HOSTS:
                self._pending[name] = noted

    def _take(self) -> dict[str, Noted]:
        with self._lock:
            taken, self._pending = self._pending, {}
        return taken

    def _put_back(self, rows: dict[str, Noted]) -> None:
        with self._lock:
            for host, noted in rows.items():
                mine = self._pending.get(host)
                if mine is None:
                    self._pending[host] = noted
                else:
                    mine.merge(noted)

    def flush(self, sessions: sessionmaker[Session]) -> int:
        """Write what was noted since the last flush (one executemany) for the hosts no
        ingest holds now (the rest wait for the next flush); hosts written."""
        rows = self._take()
        if not rows:
            return 0
        try:
            with sessions() as session:
                free = set(session.scalars(select(HOSTS.c.name)
                                           .where(HOSTS.c.name.in_(sorted(rows)))
                                           .with_for_update(skip_locked=True, key_share=True)))
                busy = {h: n for h, n in rows.items() if h not in free}
                missing = _missing(session, busy) if self.on_missing and busy else set()
                written = [{"host": h, "count": n.refused, "refused": n.refused_at,
                            "heard": n.heard_at} for h, n in sorted(rows.items()) if h in free]
                if written:
                    session.execute(FLUSH, written)
                session.commit()
        except Exception:
            self._put_back(rows)  # kept for the next flush: nothing is lost to a hiccup
            raise
        self._put_back(busy)
        if missing and self.on_missing is not None:
            self.on_missing(missing)
        return len(written)


def _missing(session: Session, busy: dict[str, Noted]) -> set[str]:
    """The names of `busy` with no host row at all (the rest are only locked now)."""
    there = set(session.scalars(select(HOSTS.c.name).where(HOSTS.c.name.in_(sorted(busy)))))
    return set(busy) - there


def _newest(column: Any, value: Any) -> Any:
    """`column` moved to `value` when that is newer (a None value keeps the column)."""
    return case((value.is_(None), column), (column.is_(None), value), (column < value, value),
                else_=column)


HOSTS = cast(Table, Host.__table__)
FLUSH = update(HOSTS).where(HOSTS.c.name == bindparam("host")).values(
    refused_reports=HOSTS.c.refused_reports + bindparam("count"),
    last_refused_at=_newest(HOSTS.c.last_refused_at,
                            bindparam("refused", type_=HOSTS.c.last_refused_at.type)),
    last_heard_at=_newest(HOSTS.c.last_heard_at,
                          bindparam("heard", type_=HOSTS.c.last_heard_at.type)))


def heard_for(app: Any) -> HeardBook:
    """The app's book (made by `app.main.create_app`)."""
    book: HeardBook = app.state.heard
    return book


async def heard_flush_job(app: Any) -> None:
    """One of the app's background jobs: flush every HEARD_FLUSH_S, and at shutdown."""
    book, sessions = heard_for(app), app.state.sessionmaker
    try:
        while True:
            await asyncio.sleep(HEARD_FLUSH_S)
            await _flush_quietly(book, sessions)
    finally:
        await _flush_quietly(book, sessions)


async def _flush_quietly(book: HeardBook, sessions: sessionmaker[Session]) -> None:
    try:
        await asyncio.to_thread(book.flush, sessions)
    except Exception:  # noqa: BLE001 - kept for the next flush; the server goes on
        log.warning("writing refused reports failed; kept for the next flush", exc_info=True)
