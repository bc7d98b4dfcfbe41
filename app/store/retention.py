"""The periodic job: roll raw measurements up into hours, then prune what is too old.

Raw samples (measurements, link and GPU counter samples) and job snapshots are kept
`retention_raw_days`, hourly rollups and report rows `retention_rollup_days`. Rolling up goes
first, so an hour is aggregated while its raw samples still exist. Each run re-aggregates
every completed hour after the newest rollup, plus the hours touched by reports received
since the previous run (a probe's spool delivering old reports late), so rollups stay exact
without bookkeeping.
Only hours whose raw samples are still complete are ever re-aggregated.

On PostgreSQL the raw tables are partitioned by day (`app/store/partitions.py`): the job
first makes the days ahead, and pruning drops whole expired days instead of deleting rows
(so raw samples stay up to a day longer than `retention_raw_days`). An advisory lock lets
exactly one replica run the job at a time; the others skip. `run_maintenance` is safe to
call as often as you like.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from sqlalchemy import Engine, case, delete, func, insert, select, text
from sqlalchemy.orm import Session

from peerwatch.app.runtime.config import Settings
from peerwatch.app.store import partitions
from peerwatch.app.store.sql import epoch_seconds, from_epoch_seconds
from peerwatch.app.store.tables.fleet import JobSnapshot
from peerwatch.app.store.tables.history import (
    GpuSample,
    LinkSample,
    Measurement,
    MeasurementRollup,
    ReportRow,
)
from peerwatch.app.store.tables.jobs import GpuJobSpan

HOUR = timedelta(hours=1)
MAINTENANCE_LOCK_ID = 0x7065_6572_6D61  # "perma"


@dataclass
class MaintenanceResult:
    skipped: bool = False  # another replica holds the lock
    rolled_from: datetime | None = None
    rolled_until: datetime | None = None
    rollup_rows: int = 0
    pruned: dict[str, int] | None = None  # rows deleted
    made: list[str] = field(default_factory=list)  # partitions made ahead (PostgreSQL)
    dropped: list[str] = field(default_factory=list)  # whole expired partitions dropped

    def __str__(self) -> str:
        """What `serve` logs: one readable line, e.g. "rolled up 12 rows (hours 10:00-12:00
        UTC); pruned reports 3, measurements 240"."""
        if self.skipped:
            return "skipped: another replica is running it"
        if self.rolled_from and self.rolled_until:
            start, end = f"{self.rolled_from:%Y-%m-%d %H:%M}", f"{self.rolled_until:%H:%M}"
            rolled = f"rolled up {self.rollup_rows} rows (hours {start}-{end} UTC)"
        else:
            rolled = "nothing to roll up"
        pruned = ", ".join(f"{table} {rows}" for table, rows in (self.pruned or {}).items()
                           if rows)
        days = (f"; made {len(self.made)} day partitions" if self.made else "") + (
            f"; dropped {', '.join(self.dropped)}" if self.dropped else "")
        return f"{rolled}; pruned {pruned or 'nothing'}{days}"


def floor_hour(at: datetime) -> datetime:
    return at.astimezone(UTC).replace(minute=0, second=0, microsecond=0)


def _rollup_start(session: Session, settings: Settings, now: datetime) -> datetime | None:
    newest = session.scalar(select(func.max(MeasurementRollup.hour)))
    if newest is not None:
        start = newest + HOUR
    else:
        start = session.scalar(select(func.min(Measurement.measured_at)))
    recent = now - timedelta(seconds=2 * settings.maintenance_interval_s)
    late = session.scalar(
        select(func.min(Measurement.measured_at)).join(ReportRow,
                                                       ReportRow.id == Measurement.report_id)
        .where(ReportRow.received_at >= recent))
    candidates = [t for t in (start, late) if t is not None]
    if not candidates:
        return None
    complete_from = floor_hour(now - timedelta(seconds=settings.retention_raw_s)) + HOUR
    return max(floor_hour(min(candidates)), complete_from)


def roll_up(session: Session, start: datetime, end: datetime) -> int:
    """Replace the rollups of hours [start, end) by aggregates of the raw measurements."""
    session.execute(delete(MeasurementRollup).where(MeasurementRollup.hour >= start,
                                                    MeasurementRollup.hour < end))
    hour = epoch_seconds(Measurement.measured_at) // 3600
    ok = Measurement.error.is_(None) & Measurement.contended.is_(False)
    judged = case((ok, Measurement.value), else_=None)
    aggregate = (
        select(
            Measurement.host_id, Measurement.src, Measurement.dst, Measurement.test,
            from_epoch_seconds(hour * 3600),
            func.count(judged), func.min(judged), func.max(judged), func.sum(judged),
            func.sum(case((Measurement.contended.is_(True), 1), else_=0)),
            func.sum(case((Measurement.error.is_not(None), 1), else_=0)),
        )
        .where(Measurement.src.is_not(None), Measurement.measured_at >= start,
               Measurement.measured_at < end)
        .group_by(Measurement.host_id, Measurement.src, Measurement.dst, Measurement.test,
                  hour)
    )
    cols = ["host_id", "src", "dst", "test", "hour", "count", "min", "max", "sum",
            "contended_count", "error_count"]
    session.execute(insert(MeasurementRollup).from_select(cols, aggregate))
    # Counted, not taken from rowcount: drivers disagree on it for INSERT ... SELECT.
    return session.scalar(select(func.count()).select_from(MeasurementRollup).where(
        MeasurementRollup.hour >= start, MeasurementRollup.hour < end)) or 0


def prune(session: Session, settings: Settings, now: datetime,
          out: MaintenanceResult) -> dict[str, int]:
    raw_cutoff = now - timedelta(seconds=settings.retention_raw_s)
    rollup_cutoff = now - timedelta(seconds=settings.retention_rollup_s)
    statements = {
        "measurement_rollups": delete(MeasurementRollup).where(
            MeasurementRollup.hour < rollup_cutoff),
        "reports": delete(ReportRow).where(ReportRow.finished_at < rollup_cutoff),
        "job_snapshots": delete(JobSnapshot).where(JobSnapshot.taken_at < raw_cutoff),
        # which job held a GPU: a few rows per job, kept as long as the reports naming it
        "gpu_jobs": delete(GpuJobSpan).where(GpuJobSpan.last_seen < rollup_cutoff),
    }
    if partitions.is_partitioned(session.connection()):
        out.dropped = partitions.drop_days_before(session.connection(), raw_cutoff)
        pruned = partitions.prune_default(session.connection(), raw_cutoff)
    else:
        statements |= {
            "measurements": delete(Measurement).where(Measurement.measured_at < raw_cutoff),
            "link_samples": delete(LinkSample).where(LinkSample.at < raw_cutoff),
            "gpu_samples": delete(GpuSample).where(GpuSample.at < raw_cutoff),
        }
        pruned = {}
    return pruned | {name: max(session.execute(stmt).rowcount or 0, 0)  # type: ignore[attr-defined]
                     for name, stmt in statements.items()}


def make_days_ahead(session: Session, now: datetime) -> list[str]:
    """PostgreSQL: the partitions from yesterday to `AHEAD_DAYS` ahead of `now`."""
    if not partitions.is_partitioned(session.connection()):
        return []
    today = partitions.today(now)
    return partitions.ensure_days(session.connection(), today - partitions.DAY,
                                  today + timedelta(days=partitions.AHEAD_DAYS))


def _locked(session: Session) -> bool:
    if session.get_bind().dialect.name != "postgresql":
        return True
    return bool(session.scalar(text("SELECT pg_try_advisory_xact_lock(:k)"),
                               {"k": MAINTENANCE_LOCK_ID}))


def run_maintenance(engine: Engine, settings: Settings,
                    now: datetime | None = None) -> MaintenanceResult:
    """Roll up completed hours, then prune; one transaction."""
    now = now or datetime.now(UTC)
    with Session(engine) as session, session.begin():
        if not _locked(session):
            return MaintenanceResult(skipped=True)
        out = MaintenanceResult(made=make_days_ahead(session, now))
        start, end = _rollup_start(session, settings, now), floor_hour(now)
        if start is not None and start < end:
            out.rolled_from, out.rolled_until = start, end
            out.rollup_rows = roll_up(session, start, end)
        out.pruned = prune(session, settings, now, out)
        return out
