"""Store job snapshots: checked as a whole, kept whole, idempotent on `snapshot_id`.

The wire model (`probes/snapshot.py`) judges each value; here the snapshot is judged as a
whole, with the report's own checks (`inventory_problems`, `sample_problems`: duplicate
GPUs or links, rows naming GPUs the inventory lacks) plus what the diff relies on (one GPU
per UUID) and a clock not far ahead. A retry of a stored snapshot is a duplicate (200); the
same `snapshot_id` with another body is a conflict (409), as for reports.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from peerwatch.app.api.report_checks import (
    MAX_CLOCK_AHEAD,
    ReportConflict,
    inventory_problems,
    sample_problems,
)
from peerwatch.app.schemas.snapshots import SnapshotStored
from peerwatch.app.store.tables.fleet import JobSnapshot
from peerwatch.probes.snapshot import Snapshot


def check_snapshot(snap: Snapshot, now: datetime) -> list[dict[str, Any]]:
    """Every coherence problem of `snap`, as pydantic-style errors (empty when fine)."""
    errors = inventory_problems(snap.inventory)
    errors += sample_problems(snap.counters, {g.index for g in snap.inventory.gpus},
                              ("counters",))
    seen: set[str] = set()
    for i, gpu in enumerate(snap.inventory.gpus):
        if gpu.uuid in seen:
            errors.append({"type": "value_error", "loc": ("inventory", "gpus", i, "uuid"),
                           "msg": f"duplicate GPU uuid {gpu.uuid}"})
        seen.add(gpu.uuid)
    if snap.taken_at > now + MAX_CLOCK_AHEAD:
        errors.append({"type": "value_error", "loc": ("taken_at",),
                       "msg": f"{snap.taken_at.isoformat()} is more than {MAX_CLOCK_AHEAD} "
                              "ahead of the server's clock"})
    return errors


def snapshot_digest(snap: Snapshot) -> str:
    return hashlib.sha256(snap.model_dump_json().encode()).hexdigest()


def _stored(session: Session, snap: Snapshot, digest: str) -> SnapshotStored | None:
    row = session.scalar(select(JobSnapshot).where(JobSnapshot.snapshot_id == snap.snapshot_id))
    if row is None:
        return None
    if row.digest != digest:
        raise ReportConflict(f"snapshot_id {snap.snapshot_id} was stored before with a "
                             "different body; a new snapshot needs a new snapshot_id")
    return SnapshotStored(snapshot_id=row.snapshot_id, host=row.host, job_id=row.job_id,
                          phase=row.phase, duplicate=True)


def store_snapshot(session: Session, snap: Snapshot, now: datetime) -> SnapshotStored:
    """Store `snap` (or recognise it as stored before) and commit."""
    digest = snapshot_digest(snap)
    found = _stored(session, snap, digest)
    if found is not None:
        return found
    session.add(JobSnapshot(
        snapshot_id=snap.snapshot_id, host=snap.host.hostname, job_id=snap.job_id,
        phase=snap.phase.value, taken_at=snap.taken_at, received_at=now, digest=digest,
        body=snap.model_dump(mode="json")))
    try:
        session.commit()
    except IntegrityError:  # another replica stored the same snapshot_id just now
        session.rollback()
        found = _stored(session, snap, digest)
        if found is None:
            raise
        return found
    return SnapshotStored(snapshot_id=snap.snapshot_id, host=snap.host.hostname,
                          job_id=snap.job_id, phase=snap.phase.value, duplicate=False)
