"""Keep which job held which GPU from each report, inside the report's own
transaction: stored whole with it or not at all.

Each (GPU, job) the report names widens that job's span on the host to the report's
[started_at, finished_at] (`app/store/tables/jobs.py`); a report older than the span (a spooled
one arriving late) widens it backwards. One `INSERT ... ON CONFLICT DO UPDATE` for all of
them (PostgreSQL and SQLite both have it): no read first, and two replicas storing reports
of one host at once cannot both insert a span. A report without jobs claims nothing and
changes nothing: a host without a mapping never has a job.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import case
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from peerwatch.app.store.tables.jobs import GpuJobSpan
from peerwatch.probes.report import Report


def store_gpu_jobs(session: Session, host_id: int, report: Report) -> int:
    """Widen or add the spans of the report's jobs; the number of (GPU, job) it named."""
    if not report.jobs:
        return 0
    start, end = report.started_at, report.finished_at
    rows: list[dict[str, Any]] = [
        {"host_id": host_id, "gpu": j.gpu, "job": j.job, "source": j.source.value,
         "first_seen": start, "last_seen": end}
        for j in {(j.gpu, j.job): j for j in report.jobs}.values()]
    postgresql = session.get_bind().dialect.name == "postgresql"
    stmt = (postgresql_insert if postgresql else sqlite_insert)(GpuJobSpan)
    table, new = GpuJobSpan.__table__.c, stmt.excluded
    session.execute(stmt.on_conflict_do_update(
        index_elements=[table.host_id, table.gpu, table.job],
        set_={"first_seen": case((new.first_seen < table.first_seen, new.first_seen),
                                 else_=table.first_seen),
              "last_seen": case((new.last_seen > table.last_seen, new.last_seen),
                                else_=table.last_seen)}), rows)
    return len(rows)
