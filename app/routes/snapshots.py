"""Job snapshots: probes and Slurm prologs/epilogs post them; the host page and operators
read them and the diff of a job's prolog and epilog.

`POST /api/v1/snapshots` reads its body by hand, like `POST /api/v1/reports` and with its
helpers, so the checks come in the most useful order: probe credential (401/403), size (413 while
reading), JSON (422), `schema_version` (400 naming the supported), the wire model and the
snapshot's coherence (422 naming each field). Idempotent on `snapshot_id` (200 for a retry,
409 for a reused id with another body).
"""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Path, Request, Response, status
from starlette.concurrency import run_in_threadpool

from peerwatch.app.api.deps import HostPath, ProbeDep, SessionDep, SettingsDep
from peerwatch.app.api.errors import body_errors
from peerwatch.app.api.json_body import read_limited_body
from peerwatch.app.api.report_checks import check_speaker
from peerwatch.app.api.wire_body import parse_wire
from peerwatch.app.queries.snapshots import get_snapshot, host_snapshots, job_diff
from peerwatch.app.runtime.credentials import Identity
from peerwatch.app.schemas.snapshots import JobDiff, SnapshotList, SnapshotStored
from peerwatch.app.services.snapshots import check_snapshot, store_snapshot
from peerwatch.probes.report import utcnow
from peerwatch.probes.snapshot import JOB_ID, JOB_ID_RULE, SUPPORTED_SNAPSHOT_VERSIONS, Snapshot

router = APIRouter(prefix="/api/v1", tags=["snapshots"])

JobIdPath = Annotated[str, Path(pattern=f"^{JOB_ID.pattern}$", description=JOB_ID_RULE)]


def parse_snapshot(body: bytes) -> Snapshot:
    """JSON -> schema_version (400) -> 64-bit integers -> wire model (422s naming fields)."""
    return parse_wire(body, Snapshot, SUPPORTED_SNAPSHOT_VERSIONS, "snapshot",
                      version_field="snapshot schema_version")


def _store(request: Request, body: bytes, speaker: Identity) -> SnapshotStored:
    snap = parse_snapshot(body)
    check_speaker(snap.host.hostname, speaker)
    now = utcnow()
    if problems := check_snapshot(snap, now):
        raise body_errors(problems)
    with request.app.state.sessionmaker() as session:
        return store_snapshot(session, snap, now)


@router.post(
    "/snapshots", response_model=SnapshotStored, status_code=status.HTTP_201_CREATED,
    summary="Store one job snapshot (probe token)",
    responses={
        200: {"model": SnapshotStored, "description": "Stored before (same snapshot_id)."},
        400: {"description": "Unsupported schema_version (the detail names the supported)."},
        401: {"description": "No bearer token."},
        403: {"description": "The bearer token is not a probe credential for the "
                             "snapshot's host."},
        409: {"description": "This snapshot_id was stored before with a different body."},
        413: {"description": "Body larger than PEERWATCH_MAX_BODY_BYTES."},
    },
    openapi_extra={"requestBody": {"required": True, "content": {"application/json": {
        "schema": {"$ref": "#/components/schemas/Snapshot"}}}}},
)
async def post_snapshot(request: Request, response: Response, speaker: ProbeDep,
                        settings: SettingsDep) -> SnapshotStored:
    body = await read_limited_body(request, settings.max_body_bytes, "snapshot")
    stored = await run_in_threadpool(_store, request, body, speaker)
    if stored.duplicate:
        response.status_code = status.HTTP_200_OK
    return stored


@router.get("/snapshots/{snapshot_id}", response_model=Snapshot,
            summary="One job snapshot, whole")
def read_snapshot(snapshot_id: uuid.UUID, session: SessionDep) -> Snapshot:
    return get_snapshot(session, snapshot_id)


@router.get("/hosts/{host}/snapshots", response_model=SnapshotList,
            summary="A host's job snapshots, newest first")
def list_snapshots(host: HostPath, session: SessionDep) -> SnapshotList:
    return host_snapshots(session, host)


@router.get("/hosts/{host}/jobs/{job_id}/diff", response_model=JobDiff,
            summary="What changed on a host from a job's prolog snapshot to its epilog")
def get_job_diff(host: HostPath, job_id: JobIdPath, session: SessionDep) -> JobDiff:
    return job_diff(session, host, job_id)
