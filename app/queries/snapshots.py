"""Read job snapshots: a host's list, one snapshot, and a job's prolog -> epilog diff.

The diff is computed on read from the two stored bodies with the same pure code the CLI
uses (`probes/snapshot_diff.py`); it is a comparison of two stored facts, not a verdict, so
nothing is judged here. A host is known when the probe has reported it or it has posted
snapshots; anything else is a 404 naming what is missing.
"""

from __future__ import annotations

import uuid

from sqlalchemy import select
from sqlalchemy.orm import Session

from peerwatch.app.queries.common import NotFound
from peerwatch.app.schemas.snapshots import DiffLine, JobDiff, SnapshotList, SnapshotSummary
from peerwatch.app.store.tables.fleet import JobSnapshot
from peerwatch.app.store.tables.inventory import Host
from peerwatch.probes.report import LinkState
from peerwatch.probes.snapshot import Phase, Snapshot
from peerwatch.probes.snapshot_diff import diff_snapshots

LIST_LIMIT = 500


def summary(row: JobSnapshot) -> SnapshotSummary:
    inventory = row.body.get("inventory", {})
    down = sum(p.get("state") == LinkState.DOWN.value for p in inventory.get("nvlinks", []))
    return SnapshotSummary(snapshot_id=row.snapshot_id, host=row.host, job_id=row.job_id,
                           phase=row.phase, taken_at=row.taken_at, received_at=row.received_at,
                           gpus=len(inventory.get("gpus", [])), links_down=down)


def _check_host(session: Session, host: str) -> None:
    known = session.scalar(select(Host.id).where(Host.name == host)) or session.scalar(
        select(JobSnapshot.id).where(JobSnapshot.host == host).limit(1))
    if known is None:
        raise NotFound("host", host)


def host_snapshots(session: Session, host: str, limit: int = LIST_LIMIT) -> SnapshotList:
    """The host's snapshots, newest first."""
    _check_host(session, host)
    rows = session.scalars(select(JobSnapshot).where(JobSnapshot.host == host)
                           .order_by(JobSnapshot.taken_at.desc(), JobSnapshot.id.desc())
                           .limit(limit))
    return SnapshotList(host=host, snapshots=[summary(r) for r in rows])


def get_snapshot(session: Session, snapshot_id: uuid.UUID) -> Snapshot:
    row = session.scalar(select(JobSnapshot).where(JobSnapshot.snapshot_id == snapshot_id))
    if row is None:
        raise NotFound("snapshot", str(snapshot_id))
    return Snapshot.model_validate(row.body)


def _newest(session: Session, host: str, job_id: str, phase: Phase) -> JobSnapshot:
    row = session.scalar(select(JobSnapshot).where(
        JobSnapshot.host == host, JobSnapshot.job_id == job_id,
        JobSnapshot.phase == phase.value).order_by(JobSnapshot.taken_at.desc()).limit(1))
    if row is None:
        raise NotFound(f"{phase.value} snapshot of job", job_id, host)
    return row


def job_diff(session: Session, host: str, job_id: str) -> JobDiff:
    """What changed on `host` from the job's prolog snapshot to its epilog snapshot."""
    _check_host(session, host)
    if session.scalar(select(JobSnapshot.id).where(JobSnapshot.host == host,
                                                   JobSnapshot.job_id == job_id).limit(1)) is None:
        raise NotFound("job", job_id, host)
    before = _newest(session, host, job_id, Phase.PROLOG)
    after = _newest(session, host, job_id, Phase.EPILOG)
    changes = diff_snapshots(Snapshot.model_validate(before.body),
                             Snapshot.model_validate(after.body))
    return JobDiff(host=host, job_id=job_id, before=summary(before), after=summary(after),
                   changes=[DiffLine.of(c) for c in changes])

