"""Store one probe report: all of it in one transaction, or nothing.

Idempotency rests on the unique `reports.report_id`, not on anything in this process, so
several server replicas can receive the same report (a probe retrying after a timeout) at
once: one insert wins, the others hit the constraint, roll back and answer "duplicate".
The same retry covers two replicas creating the same new host row at once. Baselines are
no longer kept here: each judged (pair, test) carries its own (`app/judging/running.py`).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Table, bindparam, exists, insert, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from peerwatch.app.analysis.gpu_health import AER_COLUMNS
from peerwatch.app.analysis.throttle import SweepThrottle, result_label, sweep_throttles
from peerwatch.app.ingest.digest import report_digest_and_inventory
from peerwatch.app.ingest.duplicate import stored_result
from peerwatch.app.ingest.events import event_rows
from peerwatch.app.ingest.gpu_evidence import full_sweep
from peerwatch.app.ingest.gpu_jobs import store_gpu_jobs
from peerwatch.app.ingest.host_pairs import cross_host, host_pair_rows
from peerwatch.app.ingest.host_row import identity_columns, is_newest, lock_host, write_host
from peerwatch.app.ingest.inventory import (
    forget_uncommitted,
    judged_error_total,
    remember_committed,
    store_inventory,
)
from peerwatch.app.ingest.received import claim
from peerwatch.app.ingest.sparse_links import sparse_link_rows
from peerwatch.app.ingest.sparse_nics import sparse_nic_rows
from peerwatch.app.runtime import heap
from peerwatch.app.runtime.config import Settings
from peerwatch.app.schemas.ingest import IngestResult
from peerwatch.app.store.bulk import insert_rows
from peerwatch.app.store.clocks_row import packed_clocks
from peerwatch.app.store.measurement_keys import key_ids
from peerwatch.app.store.tables.events import FabricEventRow
from peerwatch.app.store.tables.history import (
    GpuSample,
    LinkSample,
    Measurement,
    ReportRow,
    gpus_text,
    key_ident,
)
from peerwatch.app.store.tables.network import HostPairResult
from peerwatch.app.store.tables.nics import NicPortSample
from peerwatch.probes.agent.clock_offset import offset_of
from peerwatch.probes.clocks import GpuClocks
from peerwatch.probes.report import (
    Report,
    ReportKind,
    TransferResult,
    test_scope,
)

ATTEMPTS = 3
CLOCK_TRANSIT_BOUND_S = 10.0  # the probe's request timeout (PEERWATCH_PROBE_REQUEST_TIMEOUT_S)
# the report row through its table, not the ORM's bulk insert: built once, no ORM step
_REPORTS: Table = ReportRow.__table__  # type: ignore[assignment]
_COLUMNS = [c for c in _REPORTS.c if c.name != "id"]
# Nothing when the report_id is stored: unique only with finished_at (the partition column,
# migration 0029), so a report_id reused with another finished_at is found here and answered
# as the duplicate or the conflict it is (`stored_result`).
INSERT_REPORT = insert(_REPORTS).from_select(
    [c.name for c in _COLUMNS],
    select(*(bindparam(c.name, type_=c.type) for c in _COLUMNS)).where(~exists().where(
        _REPORTS.c.report_id == bindparam("report_id", type_=_REPORTS.c.report_id.type))),
).returning(_REPORTS.c.id)


class ReportGone(RuntimeError):
    """A report_id seen stored and then not found (pruned meanwhile): tried again."""


def sent_at_of(header: str | None) -> datetime | None:
    """The probe's `X-Peerwatch-Sent-At` (ISO 8601, its clock when it sent this request);
    None when absent or unreadable (an older probe: its report's own time is used)."""
    if not header or len(header) > 64:
        return None
    try:
        at = datetime.fromisoformat(header)
    except ValueError:
        return None
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def probe_sent_at(offset_header: str | None, sent_header: str | None, arrived: datetime
                  ) -> datetime | None:
    """The send time clock skew is read against: from the probe's own measured offset
    (`X-Peerwatch-Clock-Offset`, `probes/agent/clock_offset.py`) when it sent one — as the
    send time it implies, `arrived - offset`, so `clock_reading` reads exactly that offset,
    whatever this request's transit — else its `X-Peerwatch-Sent-At`. A server slow to take
    requests inflates arrival minus send time by its own delay; the probe's measurement
    drops exchanges too slow to say anything."""
    offset = offset_of(offset_header)
    if offset is not None:
        return arrived - timedelta(seconds=offset)
    return sent_at_of(sent_header)


def clock_reading(report: Report, arrived: datetime, sent_at: datetime | None) -> float | None:
    """How far the probe's clock is behind the server's (negative: ahead), from a report whose
    transit is bounded; None when this one's is not.

    Server arrival minus the probe's own time is the clock's lag plus the transit. With the
    probe's send time (`X-Peerwatch-Sent-At`) the transit is one request's delivery, which the
    probe bounds by its request timeout (10 s by default, far under the 60 s warning): spool
    time, retries and the server's own queueing never count. Without it (an older probe) the
    report's finish time is all there is, and the transit (how long the report was held) is
    unknown but never negative: a reading at most CLOCK_TRANSIT_BOUND_S is kept (a clock
    ahead shows truthfully), a larger one may be a late report and says nothing.
    """
    if sent_at is not None:
        return (arrived - sent_at).total_seconds()
    reading = (arrived - report.finished_at).total_seconds()
    return reading if reading <= CLOCK_TRANSIT_BOUND_S else None


def ingest(session: Session, report: Report, settings: Settings, now: datetime,
           sent_at: datetime | None = None, body: bytes | None = None) -> IngestResult:
    """Store `report`, received at `now` (and sent at `sent_at` by the probe's clock, when it
    said; `body`: its canonical JSON as posted, when the sender's wire models are this
    server's), or recognise it as stored before, and commit.

    The report's digest (`report_digest_and_inventory`: of its canonical JSON) is stored with
    it; a later report with the same report_id whose content differs (`same_report`) raises
    `ReportConflict` instead of passing as a duplicate.
    """
    with heap.collector_paused():  # its rows die with it (app/runtime/heap.py)
        result = _ingest(session, report, settings, now, sent_at, body, None)
    assert result is not None, "only an expansion can find its report taken"
    return result


def expand_received(session: Session, report: Report, settings: Settings,
                    received_id: int, now: datetime, sent_at: datetime | None = None,
                    body: bytes | None = None) -> IngestResult | None:
    """`ingest` for a report stored whole before (`app/ingest/received.py`): its received
    row is deleted in the same transaction. None when another expansion (the recovery job,
    another replica's) took it first: it is stored, once."""
    with heap.collector_paused():
        return _ingest(session, report, settings, now, sent_at, body, received_id)


def _ingest(session: Session, report: Report, settings: Settings, now: datetime,
            sent_at: datetime | None, body: bytes | None, received_id: int | None
            ) -> IngestResult | None:
    digest, inventory_json = report_digest_and_inventory(report, body)
    for attempt in range(ATTEMPTS):
        try:
            if received_id is not None and not claim(session, received_id):
                session.rollback()
                return None  # expanded by another: nothing of it is this one's to store
            # a first attempt goes straight to the insert, whose unique report_id finds a
            # duplicate; only a retry (after that or another conflict) looks it up
            result = stored_result(session, report, digest) if attempt else None
            if result is None:
                result = _store(session, report, settings, now, digest, inventory_json,
                                sent_at)
            session.commit()
            remember_committed(session)
            return result
        except (IntegrityError, ReportGone):
            session.rollback()
            forget_uncommitted(session)
            if attempt == ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")


def _store(session: Session, report: Report, settings: Settings, now: datetime,
           digest: str, inventory_json: bytes, sent_at: datetime | None) -> IngestResult:
    host = lock_host(session, report.host, now)
    # one INSERT, not an ORM flush; the unique report_id is checked here, before other work
    report_pk = session.execute(INSERT_REPORT, _report_row(report, host.id, now,
                                                           digest)).scalar()
    if report_pk is None:  # stored before: a retry's duplicate, or a ReportConflict
        stored = stored_result(session, report, digest)
        if stored is None:
            raise ReportGone(report.report_id)
        return stored
    # the host row's new values, written in one UPDATE at the end
    values: dict[str, Any] = {"last_received_at": now,
                              "refused_reports": 0}  # "N refused" counts from the last stored
    newest = is_newest(host, report.finished_at)
    if newest:
        values.update(identity_columns(report.host))
        changed = store_inventory(session, host, report, now,
                                  inventory_json)  # and Fabric Manager's state
        if changed or not host.inventory_stamped:
            values["inventory_changed_at"] = now
        values["last_report_at"] = report.finished_at
        errors = judged_error_total(report.counters)
        if errors is not None:
            values["error_total"] = errors
    reading = clock_reading(report, now, sent_at) if newest or sent_at else None
    if reading is not None:
        values["clock_skew_s"] = reading
    if report.kind is ReportKind.SWEEP and (
            host.last_sweep_at is None or report.finished_at > host.last_sweep_at):
        values["last_sweep_at"] = report.finished_at
        if full_sweep(report):
            values["full_sweep_at"] = now  # its arrival: judged once judged_at passes it
    throttled = report_throttles(report)
    measurements = _measurement_rows(session, report, host.id, report_pk, throttled)
    links, gpus = _sample_rows(report, host.id, report_pk, throttled)
    # the GPU rows are the host's reading times the link rates span: without them, dense
    links = sparse_link_rows(session, host, links, report.finished_at, newest and bool(gpus))
    nics = sparse_nic_rows(session, host, nic_rows(report, host.id, report_pk),
                           {g["at"] for g in gpus}, report.finished_at, newest)
    events = event_rows(report, host.id, report_pk)
    if events:  # the judgement fast path steps aside until they are judged (unchanged.py)
        values["events_stored_at"] = now
    for model, rows in ((Measurement, measurements), (LinkSample, links), (GpuSample, gpus),
                        (FabricEventRow, events),
                        (NicPortSample, nics),
                        (HostPairResult, host_pair_rows(report, now))):
        insert_rows(session, model, rows)
    store_gpu_jobs(session, host.id, report)  # which job held each GPU
    write_host(session, host, values)
    return IngestResult(report_id=report.report_id, host=host.name, duplicate=False,
                        measurements=len(measurements), counter_samples=len(links))


def nic_rows(report: Report, host_id: int, report_pk: int) -> list[dict[str, Any]]:
    """One nic_port_samples row per NIC port and reading (schema 5; none before), before
    `sparse_nic_rows` leaves out the repeats."""
    return [{"report_id": report_pk, "host_id": host_id, "at": sample.at,
             "device": p.device, "port": p.port, "state": p.state, "phys_state": p.phys_state,
             "rate_gbps": p.rate_gbps, "link_layer": p.link_layer,
             "counters": dict(p.counters)}
            for sample in report.counters for p in sample.nic_ports]


def clock_columns(c: GpuClocks | None, throttle: SweepThrottle | None) -> dict[str, Any]:
    """A gpu_samples row's clocks columns (migration 0017; the sample as a list since 0033,
    app/store/clocks_row.py): all None without a sample."""
    if c is None:
        return {"clock_reasons": None, "throttle": None, "clocks": None}
    return {"clock_reasons": c.reasons,
            "throttle": ",".join(throttle.kinds) if throttle else None,
            "clocks": packed_clocks(c.model_dump(mode="json", exclude={"gpu", "reasons"}))}


def _report_row(report: Report, host_id: int, now: datetime, digest: str) -> dict[str, Any]:
    cost = report.cost
    return {
        "report_id": report.report_id, "host_id": host_id,
        "schema_version": report.schema_version, "kind": report.kind.value,
        "started_at": report.started_at, "finished_at": report.finished_at,
        "received_at": now, "gpu_time_s": cost.gpu_time_s, "wall_time_s": cost.wall_time_s,
        "device_memory_bytes_max": cost.device_memory_bytes_max,
        "agent_cpu_s": cost.agent_cpu_s, "agent_rss_bytes": cost.agent_rss_bytes,
        "dropped_reports": cost.dropped_reports,
        "skipped": [s.model_dump(mode="json") for s in cost.skipped],
        "errors": [e.model_dump(mode="json") for e in report.errors], "digest": digest,
    }


def stored_pair(r: TransferResult) -> tuple[int | None, int | None]:
    """The (src, dst) a result is stored under: an allreduce under none (its GPU set is in
    `gpus`), a per-GPU test (h2d, d2h, local; dst null on the wire) on the diagonal, src =
    dst = the GPU, so the (pair, test) tables hold its history, baseline and verdict."""
    scope = test_scope(r.test)
    if scope == "set":
        return None, None
    return r.src, (r.src if scope == "gpu" else r.dst)


def report_throttles(report: Report) -> dict[int, SweepThrottle]:
    """The GPUs throttled during the report's pass: its first and last clocks samples and
    the violation counters' rise between them (app/analysis/throttle.py)."""
    if not report.counters:
        return {}
    return sweep_throttles(report.counters[0].clocks, report.counters[-1].clocks)


def _measurement_rows(session: Session, report: Report, host_id: int, report_pk: int,
                      throttled: dict[int, SweepThrottle]) -> list[dict[str, Any]]:
    """The report's rows of `measurements`, each naming its key (made if new, 0036)."""
    kept = [(r, stored_pair(r)) for r in report.results if not cross_host(r)]
    if not kept:  # cross-host results are host_pair_results (host_pairs.py)
        return []
    parts = [(r.test._value_, src, dst, gpus_text(r.gpus)) for r, (src, dst) in kept]
    ids = key_ids(session, host_id, set(parts))
    return [{
        "report_id": report_pk, "key_id": ids[key_ident(*key)], "value": r.value,
        "contended": r.contended, "foreign_bytes": r.foreign_bytes or None,  # NULL: 0034
        "error": r.error, "measured_at": r.started_at or report.started_at,
        "throttle": result_label(r.local_gpus(), throttled) if throttled else None,
    } for (r, _), key in zip(kept, parts, strict=True)]


def _sample_rows(report: Report, host_id: int, report_pk: int,
                 throttled: dict[int, SweepThrottle]
                 ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    links: list[dict[str, Any]] = []
    gpus: list[dict[str, Any]] = []
    for sample in report.counters:
        base = {"report_id": report_pk, "host_id": host_id, "at": sample.at}
        port = {"host_id": host_id, "at": sample.at}  # no report_id since 0035
        # the model's own field dict (its fields and no extras: the wire models are
        # extra="forbid"), not model_dump(): 288 of them in a report
        links.extend({**port, **vars(c)} for c in sample.links)
        activity = {a.gpu: a for a in sample.activity}
        clocks = {c.gpu: c for c in sample.clocks}
        aer = {x.gpu: x for x in sample.aer}
        for gpu in sorted(set(activity) | set(sample.pcie_replay) | set(clocks) | set(aer)):
            a, e = activity.get(gpu), aer.get(gpu)
            gpus.append({
                **base, "gpu": gpu, "pcie_replay": sample.pcie_replay.get(gpu),
                "utilization_pct": a.utilization_pct if a else None,
                "memory_used_bytes": a.memory_used_bytes if a else None,
                "compute_processes": a.compute_processes if a else None,
                **clock_columns(clocks.get(gpu), throttled.get(gpu)),
                **{column: e.total(kind) if e else None
                   for kind, column in AER_COLUMNS.items()},
            })
    return links, gpus
