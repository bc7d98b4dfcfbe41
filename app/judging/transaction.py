"""The unit of judging one host: its lock, the judgement, the stored verdicts, and the open
session in which the caller (`evaluate.py`) evaluates the alert rules before the one commit,
so alerts fire from exactly the verdicts every reader sees.

The per-host lock (`store/locks.py`, named by the host) keeps two replicas (or the ingest
hook and the periodic loop of one replica) from judging the same host at once.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import ColumnElement, or_, select
from sqlalchemy.orm import Session, sessionmaker

from peerwatch.app.judging.store import judge_and_store
from peerwatch.app.judging.unchanged import still_judged
from peerwatch.app.records.health import HostHealth
from peerwatch.app.runtime import heap
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.db import BINARY_RESULTS
from peerwatch.app.store.locks import transaction_lock
from peerwatch.app.store.tables.inventory import Host
from peerwatch.app.store.tables.judged import JudgedHost


@dataclass
class Judging:
    """One host's judgement inside its open, locked transaction (the caller commits)."""

    session: Session
    row: Host | None  # None: the host is gone (its alerts still resolve)
    health: HostHealth | None = None  # None with a row: nothing judged changed
    current: bool = False  # judged at or after `due_before` already: nothing to do
    unchanged: bool = False  # the fast path: only `judged_at` moved (`unchanged.py`)


def judged_after_newest_report() -> ColumnElement[bool]:
    """A host's judgement is newer than its newest report's arrival (or it never reported)."""
    return or_(Host.last_received_at.is_(None), JudgedHost.judged_at >= Host.last_received_at)


def _judged_since(session: Session, host: str, at: datetime) -> bool:
    """Judged at or after `at`, and after its newest report arrived: nothing to do."""
    judged = session.scalar(select(JudgedHost.judged_at).join(Host, Host.id == JudgedHost.host_id)
                            .where(Host.name == host, JudgedHost.judged_at >= at,
                                   judged_after_newest_report()))
    return judged is not None


@contextmanager
def judging(sessions: sessionmaker[Session], host: str, now: datetime, settings: Settings,
            due_before: datetime | None = None,
            skip_within_skew_s: float | None = None,
            reseed: bool = False) -> Iterator[Judging]:
    """Lock `host`, judge it at `now` and store what changed; yield the open transaction.

    `due_before` (the periodic round): judge nothing when the host was judged at or after
    it, by whichever replica; checked behind the lock, so two replicas' rounds judge it once.
    `skip_within_skew_s`: an unchanged healthy host whose probe's clock skew is within it
    (and no alert active) keeps its stored verdicts, only `judged_at` moves
    (`unchanged.still_judged`: one SELECT, one UPDATE; `Judging.unchanged`); None: judge;
    `reseed`: judge the (pair, test) verdicts from history (an operator's re-judgement).
    """
    with heap.collector_paused(), sessions() as session:
        # its reads come back in binary on PostgreSQL (app/store/db.py): set before the first
        # statement, it holds for the transaction's connection
        session.connection(execution_options={BINARY_RESULTS: True})
        with transaction_lock(session, host):
            yield from _judged(session, host, now, settings, due_before, skip_within_skew_s,
                               reseed)


def _judged(session: Session, host: str, now: datetime, settings: Settings,
            due_before: datetime | None, skip_within_skew_s: float | None, reseed: bool
            ) -> Iterator[Judging]:
    if due_before is not None and _judged_since(session, host, due_before):
        yield Judging(session, None, current=True)
    elif skip_within_skew_s is not None and not reseed and still_judged(
            session, host, now, settings.stale_after_s, skip_within_skew_s):
        yield Judging(session, None, unchanged=True)
    else:
        row = session.scalar(select(Host).where(Host.name == host))
        out = Judging(session, row)
        if row is not None:
            out.health = judge_and_store(session, settings, row, now, reseed=reseed)
        yield out
