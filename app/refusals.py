"""Reports the server refused (429/503), by host: a refused probe was heard from.

A saturated server answers before it reads the body, so it cannot know whose report it
refused — unless the probe names its host in a header (`X-Peerwatch-Host`, sent by
`probes/agent/sender.py`). Each refusal is noted here in memory (a dict update: refusing
must stay cheap) and `RefusalBook.flush` writes them in one batched UPDATE every
REFUSAL_FLUSH_S (a background job of the app, and once more at shutdown): `hosts.
last_refused_at` and `hosts.refused_reports` (refused since the host's last stored report;
ingest sets it back to 0). Staleness counts a refusal as hearing from the probe
(`services/judge.py` `last_heard_at`), and readers show "not judged since HH:MM: server
busy, N reports refused" (`app/queries/busy.py`) instead of blaming the probe.

A name that is no known host changes nothing (the UPDATE matches no row); at most
MAX_HOSTS names are held between flushes, so a flood of invented names costs bounded memory.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Table, bindparam, case, update
from sqlalchemy.orm import Session, sessionmaker

from app.models import Host
from probes.report import valid_hostname

log = logging.getLogger(__name__)

REFUSAL_FLUSH_S = 2.0
MAX_HOSTS = 100_000


class RefusalBook:
    """Refusals per host name since the last flush: (count, newest)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: dict[str, tuple[int, datetime]] = {}

    def note(self, host: str | None, at: datetime) -> None:
        """Count a refusal of `host`'s report; a header that names no valid host counts nothing,
        and a valid one is kept in its canonical spelling (as stored hosts are)."""
        try:
            host = valid_hostname(host) if host else None
        except ValueError:
            return
        if host is None:
            return
        with self._lock:
            count, newest = self._pending.get(host, (0, at))
            if count == 0 and len(self._pending) >= MAX_HOSTS:
                return
            self._pending[host] = (count + 1, max(newest, at))

    def _take(self) -> dict[str, tuple[int, datetime]]:
        with self._lock:
            taken, self._pending = self._pending, {}
        return taken

    def _put_back(self, rows: dict[str, tuple[int, datetime]]) -> None:
        with self._lock:
            for host, (count, at) in rows.items():
                mine, newest = self._pending.get(host, (0, at))
                self._pending[host] = (mine + count, max(newest, at))

    def flush(self, sessions: sessionmaker[Session]) -> int:
        """Write what was noted since the last flush (one executemany); hosts written."""
        rows = self._take()
        if not rows:
            return 0
        hosts = cast(Table, Host.__table__)
        at = bindparam("at", type_=hosts.c.last_refused_at.type)
        statement = update(hosts).where(hosts.c.name == bindparam("host")).values(
            refused_reports=hosts.c.refused_reports + bindparam("count"),
            last_refused_at=case((hosts.c.last_refused_at.is_(None), at),
                                 (hosts.c.last_refused_at < at, at),
                                 else_=hosts.c.last_refused_at))
        try:
            with sessions() as session:
                session.execute(statement, [{"host": h, "count": n, "at": t}
                                            for h, (n, t) in sorted(rows.items())])
                session.commit()
        except Exception:
            self._put_back(rows)  # kept for the next flush: nothing is lost to a hiccup
            raise
        return len(rows)


def refusals_for(app: Any) -> RefusalBook:
    """The app's book (made by `app.main.create_app`)."""
    book: RefusalBook = app.state.refusals
    return book


async def refusal_flush_job(app: Any) -> None:
    """One of the app's background jobs: flush every REFUSAL_FLUSH_S, and at shutdown."""
    book, sessions = refusals_for(app), app.state.sessionmaker
    try:
        while True:
            await asyncio.sleep(REFUSAL_FLUSH_S)
            await _flush_quietly(book, sessions)
    finally:
        await _flush_quietly(book, sessions)


async def _flush_quietly(book: RefusalBook, sessions: sessionmaker[Session]) -> None:
    try:
        await asyncio.to_thread(book.flush, sessions)
    except Exception:  # noqa: BLE001 - kept for the next flush; the server goes on
        log.warning("writing refused reports failed; kept for the next flush", exc_info=True)
