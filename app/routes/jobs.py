"""A job's page: the GPUs it held (from the reports' job mapping) and what went
wrong on them while it ran. `GET /api/v1/jobs/{job}`; the dashboard's `#/job/<id>`."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path

from peerwatch.app.api.deps import SessionDep
from peerwatch.app.queries.jobs import job_page
from peerwatch.app.schemas.jobs import JobOut
from peerwatch.probes.report import JOB_ID, JOB_ID_RULE

router = APIRouter(prefix="/api/v1", tags=["jobs"])

JobPath = Annotated[str, Path(pattern=f"^{JOB_ID.pattern}$", description=JOB_ID_RULE)]


@router.get("/jobs/{job}", response_model=JobOut, summary="Which GPUs a job held and what "
            "went wrong during it", responses={404: {"description": "No report named the job."}})
def get_job(job: JobPath, session: SessionDep) -> JobOut:
    return job_page(session, job)  # an unknown job: NotFound, app.main's 404
