"""Named transaction locks: one writer at a time for a name — a host's judgement, the
network's evaluation, a scheduler's drain records — in every replica.

- PostgreSQL: `pg_advisory_xact_lock(namespace, crc32(name))`, released by the commit or
  rollback, so a replica that dies mid-way lets go;
- SQLite (one server process): a process-wide lock around the transaction.

The caller reads what it is about to change only once it holds the lock: a second writer
that read before the first committed would act on what is no longer true.
"""

from __future__ import annotations

import threading
import zlib
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import text
from sqlalchemy.orm import Session

from peerwatch.app.runtime.leadership import LOCK_NAMESPACE

_SQLITE_LOCK = threading.RLock()


def _lock_key(name: str) -> int:
    """crc32 of the name as a signed 32-bit int (pg's int4 advisory key)."""
    value = zlib.crc32(name.encode())
    return value - (1 << 32) if value >= 1 << 31 else value


@contextmanager
def transaction_lock(session: Session, name: str) -> Iterator[None]:
    """Hold the lock of `name` until the session's transaction ends."""
    if session.get_bind().dialect.name == "postgresql":
        session.execute(text("SELECT pg_advisory_xact_lock(:ns, :key)"),
                        {"ns": LOCK_NAMESPACE, "key": _lock_key(name)})
        yield
        return
    with _SQLITE_LOCK:
        yield
