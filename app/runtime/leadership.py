"""Which replica runs the jobs that must run once: a PostgreSQL advisory lock held for life.

Every `peerwatch serve` process ingests and answers; the periodic jobs (alert evaluation
round and Alertmanager delivery, rollups, retention, partition creation) run only in the
replica that holds the session-level advisory lock `LEADER_LOCK` on a connection of its own.
The lock lives as long as that connection: when the leader dies or loses the database, the
server drops the lock and another replica takes it at its next attempt, so the jobs go on
with no configuration and no extra service (the pattern of Kubernetes leader election, with
the database as the lease). SQLite is one process: it is always the leader.

Two more locks make the jobs safe even if two replicas did run them at once (a leader that
has lost its connection but not yet noticed): maintenance's transaction lock in
`services/retention.py`, and `exclusive(engine, key)` below, which delivery takes.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Connection, Engine, text

log = logging.getLogger(__name__)

LOCK_NAMESPACE = 0x5057  # "PW": first key of peerwatch's advisory locks (store/locks.py too)
LEADER_LOCK = 1
DELIVERY_LOCK = 2
JUDGE_ROUND_LOCK = 3  # the judge processes' periodic round (app/judging/worker.py)


class Leadership:
    """`held()`: is this replica the leader now (taking the lock if it is free)?"""

    def __init__(self, engine: Engine, key: int = LEADER_LOCK) -> None:
        self.engine = engine
        self.key = key
        self._conn: Connection | None = None
        self._guard = threading.Lock()

    def held(self) -> bool:
        if self.engine.dialect.name != "postgresql":
            return True
        with self._guard:
            try:
                return self._keep() or self._take()
            except Exception:  # the database is away: nobody here leads until it is back
                log.warning("leadership check failed; not leading", exc_info=True)
                self._drop()
                return False

    def _keep(self) -> bool:
        if self._conn is None:
            return False
        self._conn.execute(text("SELECT 1")).scalar()  # raises when the connection is gone
        return True

    def _take(self) -> bool:
        conn = self.engine.connect().execution_options(isolation_level="AUTOCOMMIT")
        got = conn.execute(text("SELECT pg_try_advisory_lock(:ns, :key)"),
                           {"ns": LOCK_NAMESPACE, "key": self.key}).scalar()
        if got:
            self._conn = conn
            log.info("this replica now runs the periodic jobs")
        else:
            conn.close()
        return bool(got)

    def _drop(self) -> None:
        """Close the lock's connection for good: back in the pool it would keep the lock."""
        if self._conn is not None:
            try:
                self._conn.invalidate()
            finally:
                self._conn = None

    def release(self) -> None:
        """Hand the lock over now: unlocked on its connection, so the next replica to ask
        takes it at once (a closed connection's lock lasts until its backend has exited,
        which on a loaded machine is not at once), then the connection is closed."""
        with self._guard:
            if self._conn is not None:
                try:
                    self._conn.execute(text("SELECT pg_advisory_unlock(:ns, :key)"),
                                       {"ns": LOCK_NAMESPACE, "key": self.key})
                except Exception:  # gone already: closing it is all there is to do
                    log.debug("unlocking the leadership lock failed", exc_info=True)
            self._drop()


@contextmanager
def exclusive(engine: Engine, key: int) -> Iterator[bool]:
    """Yield True when no other replica holds `key` now (held until the block ends)."""
    if engine.dialect.name != "postgresql":
        yield True
        return
    with engine.connect() as conn, conn.begin():
        yield bool(conn.execute(text("SELECT pg_try_advisory_xact_lock(:ns, :key)"),
                                {"ns": LOCK_NAMESPACE, "key": key}).scalar())
