"""The answer to a report whose `report_id` is stored already, in its rows: a retry's
duplicate, or a conflict when the body differs. Asked by the expansion (`rows.py`) and by
the receipt (`received.py`), which both sit above it.
"""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from peerwatch.app.api.report_checks import ReportConflict
from peerwatch.app.ingest.digest import same_report
from peerwatch.app.schemas.ingest import IngestResult
from peerwatch.app.store.tables.history import LinkSample, Measurement, ReportRow
from peerwatch.app.store.tables.inventory import Host
from peerwatch.probes.report import Report


def stored_result(session: Session, report: Report, digest: str) -> IngestResult | None:
    """The duplicate's answer when `report`'s report_id is stored (None when it is not)."""
    report_id = report.report_id
    row = session.execute(
        select(ReportRow.id, Host.name, ReportRow.digest, ReportRow.host_id)
        .join(Host, Host.id == ReportRow.host_id)
        .where(ReportRow.report_id == report_id)
    ).first()
    if row is None:
        return None
    pk, host, stored_digest, host_id = row
    if stored_digest and not same_report(stored_digest, digest, report):
        raise ReportConflict(f"report_id {report_id} was stored before with a different body "
                             "(other content, not only other bytes); a new report needs a new "
                             "report_id")
    measurements = session.scalar(
        select(func.count()).select_from(Measurement).where(Measurement.report_id == pk))
    samples: int | None = 0
    if report.counters:  # the host's rows at the report's reading times: (host_id, at) serves
        ats = [c.at for c in report.counters]  # a port has one reading a time (0035)
        samples = session.scalar(select(func.count()).select_from(LinkSample).where(
            LinkSample.host_id == host_id, LinkSample.at >= min(ats), LinkSample.at <= max(ats),
            LinkSample.at.in_(ats)))
    return IngestResult(report_id=report_id, host=host, duplicate=True,
                        measurements=measurements or 0, counter_samples=samples or 0)
