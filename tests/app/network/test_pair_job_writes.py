"""A pair job's two ranks join at the same moment, each writing the job's `ranks` it read.
While one join holds the job, the other cannot read-modify-write past it: it waits (here:
told at once that it would have to, by a lock timeout of nothing) and then sees both ranks.
On SQLite and PostgreSQL. A Slurm run's pair job had both ranks wait 300 s for each other,
each one's join overwritten by the other's, before `job_of` took the lock on SQLite."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import Engine, text
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session

from peerwatch.app.runtime.config import Settings
from peerwatch.app.schemas.network import PairJobIn, RankIn
from peerwatch.app.services.network import create_job, job_of, join
from peerwatch.app.store.db import make_engine


def _engine(db_url: str, wait: bool) -> Engine:
    """An engine whose sessions wait for a lock as the server's do, or (SQLite) never."""
    return make_engine(Settings(database_url=db_url,
                                sqlite_busy_timeout_ms=60_000 if wait else 0))


def _no_wait(session: Session) -> None:
    """PostgreSQL's sessions wait for a row lock unless told not to: told here."""
    if session.get_bind().dialect.name == "postgresql":
        session.execute(text("SET LOCAL lock_timeout = '1ms'"))


def test_a_rank_joining_while_the_other_holds_the_job_waits_and_sees_both(
        db_url: str) -> None:
    engine, impatient = _engine(db_url, wait=True), _engine(db_url, wait=False)
    try:
        now = datetime.now(UTC)
        with Session(engine) as s:
            job_id = create_job(s, PairJobIn(host="a", peer_host="b", scheduler="slurm"),
                                now).id
        with Session(engine) as first:
            held = job_of(first, job_id)  # rank 0's join, mid-way: it has read the job
            assert held.ranks == {}
            with Session(impatient) as second:
                _no_wait(second)
                with pytest.raises(OperationalError, match="locked|lock timeout"):
                    join(second, job_id, RankIn(rank=1, host="b"), now)
            held.ranks = {"0": {"host": "a", "address": "", "at": now.isoformat()}}
            first.commit()
        with Session(engine) as second:
            job = join(second, job_id, RankIn(rank=1, host="b"), now)
            assert sorted(job.ranks) == ["0", "1"] and job.state == "running"
    finally:
        engine.dispose()
        impatient.dispose()
