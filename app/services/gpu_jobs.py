"""Keep which job held which GPU from each report (issue 24), inside the report's own
transaction: stored whole with it or not at all.

Each (GPU, job) the report names widens that job's span on the host to the report's
[started_at, finished_at] (`app/models_jobs.py`); a report older than the span (a spooled
one arriving late) widens it backwards. A report without jobs claims nothing and changes
nothing: a host without a mapping never has a job.
"""

from __future__ import annotations

from sqlalchemy import select, tuple_
from sqlalchemy.orm import Session

from app.models import GpuJobSpan
from probes.report import Report


def store_gpu_jobs(session: Session, host_id: int, report: Report) -> int:
    """Widen or add the spans of the report's jobs; the number of (GPU, job) it named."""
    if not report.jobs:
        return 0
    named = {(j.gpu, j.job): j for j in report.jobs}
    stored = session.scalars(select(GpuJobSpan).where(
        GpuJobSpan.host_id == host_id,
        tuple_(GpuJobSpan.gpu, GpuJobSpan.job).in_(list(named)))).all()
    start, end = report.started_at, report.finished_at
    for span in stored:
        span.first_seen = min(span.first_seen, start)
        span.last_seen = max(span.last_seen, end)
        del named[(span.gpu, span.job)]
    session.add_all(GpuJobSpan(host_id=host_id, gpu=j.gpu, job=j.job, source=j.source.value,
                               first_seen=start, last_seen=end) for j in named.values())
    session.flush()
    return len(report.jobs)
