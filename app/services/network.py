"""The network's writes: the map, pair jobs and their rendezvous, cross-host results.

A pair job moves planned -> submitted (the controller gave it to the scheduler) -> running
(both ranks met here) -> done (rank 0 posted its results) | failed | cancelled. Each rank
speaks with its own host's probe credential (the route checks it speaks for the rank's
host), so no credential travels with the job. docs/network.md.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import delete, update
from sqlalchemy.orm import Session

from peerwatch.app.queries import NotFound
from peerwatch.app.schemas.network import (
    NetworkMapIn,
    PairJobIn,
    PairJobUpdate,
    PairResultsIn,
    RankIn,
    RendezvousIn,
)
from peerwatch.app.store.bulk import insert_rows
from peerwatch.app.store.tables.network import HostPairResult, NetworkHost, PairJob
from peerwatch.probes.report import TransferResult

FINISHED = ("done", "failed", "cancelled")


def result_row(host: str, r: TransferResult, at: datetime, now: datetime) -> dict[str, Any]:
    """One cross-host result as a `host_pair_results` row (a report's or a pair job's)."""
    return {"host": host, "peer_host": r.peer_host, "test": r.test.value, "src": r.src,
            "dst": r.dst, "value": r.value, "error": r.error, "job": r.job,
            "line_rate_bps": r.line_rate_bps, "measured_at": at, "received_at": now}


class JobConflict(ValueError):
    """A request the job's state or hosts do not allow (answered 409 or 422)."""


def replace_map(session: Session, body: NetworkMapIn, now: datetime) -> int:
    """The whole map at once: what a topology export or the operator's file says now."""
    names = [h.host for h in body.hosts]
    if len(set(names)) != len(names):
        dupes = sorted({n for n in names if names.count(n) > 1})
        raise JobConflict(f"hosts named more than once: {', '.join(dupes[:10])}")
    session.execute(delete(NetworkHost))
    session.add_all(NetworkHost(**h.model_dump(), updated_at=now) for h in body.hosts)
    session.commit()
    return len(names)


def create_job(session: Session, body: PairJobIn, now: datetime) -> PairJob:
    if body.host == body.peer_host:
        raise JobConflict("a pair job needs two different hosts")
    job = PairJob(host=body.host, peer_host=body.peer_host, scheduler=body.scheduler,
                  scheduler_job=None, state="planned", reason=body.reason, ranks={},
                  created_at=now, updated_at=now)
    session.add(job)
    session.commit()
    return job


def job_of(session: Session, job_id: int) -> PairJob:
    """The job, locked until the caller's commit: its two ranks join at the same moment, and
    each writes the `ranks` it read. PostgreSQL locks the row (FOR UPDATE). SQLite has no
    row locks and reads outside the transaction, so a no-op UPDATE first takes the database's
    write lock (the other writer waits, `busy_timeout`) and the read after it is current."""
    if session.get_bind().dialect.name == "sqlite":
        session.execute(update(PairJob).where(PairJob.id == job_id).values(id=PairJob.id)
                        .execution_options(synchronize_session=False))
    job = session.get(PairJob, job_id, with_for_update=True, populate_existing=True)
    if job is None:
        raise NotFound("pair job", job_id)
    return job


def update_job(session: Session, job_id: int, body: PairJobUpdate, now: datetime) -> PairJob:
    job = job_of(session, job_id)
    # the ranks may meet (running) or even finish before the controller says "submitted"
    late = body.state == "submitted" and job.state != "planned"
    if job.state in FINISHED and body.state != job.state and not late:
        raise JobConflict(f"pair job {job_id} is {job.state} already")
    if not late:
        job.state = body.state
    if body.scheduler_job is not None:
        job.scheduler_job = body.scheduler_job
    if body.reason is not None:
        job.reason = body.reason
    job.updated_at = now
    session.commit()
    return job


def join(session: Session, job_id: int, body: RankIn, now: datetime) -> PairJob:
    """A rank arrives: it must be the job's host for its rank; both in: running."""
    job = job_of(session, job_id)
    want = job.host if body.rank == 0 else job.peer_host
    if body.host != want:
        raise JobConflict(f"rank {body.rank} of pair job {job_id} is {want}, not {body.host}")
    if job.state in FINISHED:
        raise JobConflict(f"pair job {job_id} is {job.state}")
    ranks = dict(job.ranks)
    ranks[str(body.rank)] = {"host": body.host, "address": body.address, "at": now.isoformat()}
    job.ranks = ranks
    if len(ranks) == 2:
        job.state = "running"
    job.updated_at = now
    session.commit()
    return job


def put_rendezvous(session: Session, job_id: int, body: RendezvousIn, now: datetime) -> PairJob:
    """Rank 0's NCCL unique id, kept opaque in its own entry of the job's `ranks` (rank 1
    reads it back; the job's public answer leaves it out). Only while the job runs: both
    ranks have met, neither has finished."""
    job = job_of(session, job_id)
    if body.host != job.host:
        raise JobConflict(f"only rank 0 of pair job {job_id} ({job.host}) hands out its id, "
                          f"not {body.host}")
    if job.state != "running" or "0" not in job.ranks:
        raise JobConflict(f"pair job {job_id} is {job.state}: the id goes to a running job")
    ranks = dict(job.ranks)
    ranks["0"] = {**ranks["0"], "nccl_id": body.nccl_id}
    job.ranks = ranks
    job.updated_at = now
    session.commit()
    return job


def store_results(session: Session, body: PairResultsIn, now: datetime) -> int:
    """Rank 0's results; its job (if named) done, or failed when every result is an error."""
    for r in body.results:
        if r.peer_host is None or r.peer_host == body.host:
            raise JobConflict("each result names another host as peer_host")
    if body.job_id is not None:
        job = job_of(session, body.job_id)
        if {body.host, *(r.peer_host for r in body.results)} != {job.host, job.peer_host}:
            raise JobConflict(f"pair job {body.job_id} is {job.host} <-> {job.peer_host}")
        job.state = "failed" if all(r.error for r in body.results) else "done"
        job.updated_at = now
    insert_rows(session, HostPairResult, [
        result_row(body.host, r, r.started_at or now, now) for r in body.results])
    session.commit()
    return len(body.results)
