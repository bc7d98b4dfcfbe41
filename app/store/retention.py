"""The periodic job: roll raw measurements up into hours, then prune what is too old.

Raw samples (measurements, link and GPU counter samples) and job snapshots are kept
`retention_raw_days`, hourly rollups and report rows `retention_rollup_days`. Rolling up goes
first, so an hour is aggregated while its raw samples still exist. Each run re-aggregates
every completed hour after the newest rollup, plus the hours touched by reports received
since the previous run (a probe's spool delivering old reports late), so rollups stay exact
without bookkeeping.
Only hours whose raw samples are still complete are ever re-aggregated.

An hour is complete when it has ended and every host heard lately has a sweep stored that
finished past it (`_rollup_end`): each rollup row is then written once. Rolling up an hour
whose results were still coming in (a spool's backlog, a fleet's history sent at once)
rewrote each of its rows at every pass, each rewrite a dead version and, on full pages, a
new index entry (docs/scale.md: 2.4x the bytes of the rows written once; a fillfactor
made the rewrites HOT but not the table smaller). A host heard lately but far behind (a
probe clock hours slow, sweeps paused) holds the rollups back at most ROLLUP_HOLD_MAX; the
series read the hours not rolled up from the raw rows meanwhile (app/queries/series.py).

On PostgreSQL the raw tables and job snapshots are partitioned by day, report rows and
rollups by month (`app/store/partitions.py`): the job first makes the periods ahead, and
pruning drops whole expired partitions instead of deleting rows (so raw samples stay up to
a day longer than `retention_raw_days`, reports and rollups up to a month longer than
`retention_rollup_days`). What is still deleted row by row is small: the rows of the
default partitions, a few job spans per job, the fabric events. An advisory lock lets
exactly one replica run the job at a time; the others skip. `run_maintenance` is safe to
call as often as you like.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from sqlalchemy import (
    Engine,
    Select,
    Table,
    and_,
    case,
    delete,
    func,
    insert,
    literal,
    or_,
    select,
    text,
    tuple_,
    update,
)
from sqlalchemy.orm import Session

from peerwatch.app.runtime.config import Settings
from peerwatch.app.store import partitions
from peerwatch.app.store.sql import epoch_seconds, from_epoch_seconds
from peerwatch.app.store.tables.events import FabricEventRow
from peerwatch.app.store.tables.fleet import JobSnapshot
from peerwatch.app.store.tables.history import (
    GpuSample,
    LinkSample,
    Measurement,
    MeasurementKey,
    MeasurementRollup,
    ReportRow,
)
from peerwatch.app.store.tables.inventory import Host
from peerwatch.app.store.tables.jobs import GpuJobSpan
from peerwatch.app.store.tables.nics import NicPortSample

HOUR = timedelta(hours=1)
ROLLUP_HOLD_MAX = timedelta(hours=6)  # the longest one host's reports hold the rollups back
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


def _rollup_end(session: Session, settings: Settings, now: datetime) -> datetime:
    """Where the hours complete by `now` end: the hour of `now`, or the hour of the oldest
    newest sweep (`last_sweep_at`, its finish by the probe's clock) among the hosts heard
    within `stale_after_s`, but not before ROLLUP_HOLD_MAX back. A sweep's results are
    measured from its start, minutes before its finish; a host sweeps one at a time, so
    once a sweep that finished past an hour is stored, no result of that hour is still to
    come. A host not heard lately (stale) holds nothing back: its hours are as complete
    as they will be."""
    lo = now - timedelta(seconds=settings.stale_after_s)
    heard = or_(Host.last_received_at.between(lo, now), Host.last_heard_at.between(lo, now))
    slowest = session.scalar(select(func.min(Host.last_sweep_at)).where(heard))
    end = floor_hour(now)
    if slowest is None:
        return end
    return max(min(end, floor_hour(slowest)), floor_hour(now - ROLLUP_HOLD_MAX))


ROLLUP_KEY = ("host_id", "src", "dst", "test", "hour")
ROLLUP_VALUES = ("count", "min", "max", "sum", "contended_count", "error_count")


def roll_up(session: Session, start: datetime, end: datetime) -> int:
    """Make the rollups of hours [start, end) the aggregates of the raw measurements.

    An UPDATE of the rows whose aggregate changed, then an INSERT of the keys not yet
    rolled up: an hour re-rolled for a late report rewrites only the keys that report
    measured, and an update in place lets PostgreSQL reuse the page of the version it
    replaces, where deleting every row of the hours and inserting them again left a dead
    copy of each per run (7 per row when a spool's backlog came in over an hour) for vacuum
    to find. No unique index keeps a key's hour once (0035): maintenance's lock makes this
    the only writer. No row of those hours can be left without raw rows: only hours whose
    raw samples are complete are rolled up."""
    table = cast(Table, MeasurementRollup.__table__)
    columns = [*ROLLUP_KEY, *ROLLUP_VALUES]
    # the hours' own rows, by constants: PostgreSQL reads only their month's partition, and
    # in it the pages the BRIN of hour gives, not the whole history of rollups
    hours = (table.c.hour >= start, table.c.hour < end)
    fresh = _hour_aggregates(start, end).subquery("fresh")
    same_key = and_(*(table.c[c] == fresh.c[c] for c in ROLLUP_KEY))
    stored = tuple_(*(table.c[c] for c in ROLLUP_VALUES))
    session.execute(update(table).where(*hours, same_key, stored.is_distinct_from(
        tuple_(*(fresh.c[c] for c in ROLLUP_VALUES)))).values(
        {c: fresh.c[c] for c in ROLLUP_VALUES}))
    fresh = _hour_aggregates(start, end).subquery("fresh")
    rolled = select(literal(1)).select_from(table).where(
        *hours, *(table.c[c] == fresh.c[c] for c in ROLLUP_KEY))
    session.execute(insert(table).from_select(columns, select(
        *(fresh.c[c] for c in columns)).where(~rolled.exists())))
    # Counted, not taken from rowcount: drivers disagree on it for INSERT ... SELECT.
    return session.scalar(select(func.count()).select_from(MeasurementRollup).where(
        MeasurementRollup.hour >= start, MeasurementRollup.hour < end)) or 0


def _hour_aggregates(start: datetime, end: datetime) -> Select[Any]:
    """Each (host, pair, test, hour)'s aggregate of the raw rows of [start, end), its
    columns named as the rollup's: the rows grouped by key_id, then the keys named (0036)."""
    hour = epoch_seconds(Measurement.measured_at) // 3600
    ok = Measurement.error.is_(None) & Measurement.contended.is_(False)
    judged = case((ok, Measurement.value), else_=None)
    per_key = (
        select(
            Measurement.key_id, hour.label("epoch_hour"),
            func.count(judged).label("count"), func.min(judged).label("min"),
            func.max(judged).label("max"), func.sum(judged).label("sum"),
            func.sum(case((Measurement.contended.is_(True), 1), else_=0))
            .label("contended_count"),
            func.sum(case((Measurement.error.is_not(None), 1), else_=0)).label("error_count"),
        )
        .where(Measurement.measured_at >= start, Measurement.measured_at < end)
        .group_by(Measurement.key_id, hour)
    ).subquery("per_key")
    return (
        select(MeasurementKey.host_id, MeasurementKey.src, MeasurementKey.dst,
               MeasurementKey.test, from_epoch_seconds(per_key.c.epoch_hour * 3600).label("hour"),
               *(per_key.c[c] for c in ROLLUP_VALUES))
        .join_from(per_key, MeasurementKey, MeasurementKey.id == per_key.c.key_id)
        .where(MeasurementKey.src.is_not(None))
    )


def prune(session: Session, settings: Settings, now: datetime,
          out: MaintenanceResult) -> dict[str, int]:
    raw_cutoff = now - timedelta(seconds=settings.retention_raw_s)
    rollup_cutoff = now - timedelta(seconds=settings.retention_rollup_s)
    cutoffs = {"measurements": raw_cutoff, "link_samples": raw_cutoff,
               "gpu_samples": raw_cutoff, "job_snapshots": raw_cutoff,
               "reports": rollup_cutoff, "measurement_rollups": rollup_cutoff}
    deletes = {
        "measurement_rollups": delete(MeasurementRollup).where(
            MeasurementRollup.hour < rollup_cutoff),
        "reports": delete(ReportRow).where(ReportRow.finished_at < rollup_cutoff),
        "job_snapshots": delete(JobSnapshot).where(JobSnapshot.taken_at < raw_cutoff),
        "measurements": delete(Measurement).where(Measurement.measured_at < raw_cutoff),
        "link_samples": delete(LinkSample).where(LinkSample.at < raw_cutoff),
        "gpu_samples": delete(GpuSample).where(GpuSample.at < raw_cutoff),
    }
    statements = {
        # which job held a GPU: a few rows per job, kept as long as the reports naming it
        "gpu_jobs": delete(GpuJobSpan).where(GpuJobSpan.last_seen < rollup_cutoff),
        # NIC port readings: raw samples, never partitioned (a few rows per report)
        "nic_port_samples": delete(NicPortSample).where(NicPortSample.at < raw_cutoff),
        # a report's events, kept as long as it (rare: a report with an Xid)
        "fabric_events": delete(FabricEventRow).where(FabricEventRow.at < rollup_cutoff),
    }
    conn, pruned = session.connection(), dict[str, int]()
    for table in partitions.partitioned_tables(conn):  # PostgreSQL: whole partitions
        del deletes[table]
        out.dropped += partitions.drop_days_before(conn, cutoffs[table], [table])
        pruned |= partitions.prune_default(conn, cutoffs[table], [table])
    return pruned | {name: max(session.execute(stmt).rowcount or 0, 0)  # type: ignore[attr-defined]
                     for name, stmt in (deletes | statements).items()}


def make_days_ahead(session: Session, now: datetime) -> list[str]:
    """PostgreSQL: the partitions from yesterday to `AHEAD_DAYS` ahead of `now`."""
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
        start, end = _rollup_start(session, settings, now), _rollup_end(session, settings, now)
        if start is not None and start < end:
            out.rolled_from, out.rolled_until = start, end
            out.rollup_rows = roll_up(session, start, end)
        out.pruned = prune(session, settings, now, out)
        return out
