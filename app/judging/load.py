"""The reads of a judgement: everything one host's verdicts go on from, in a few batched
selects, before any of it is judged (`load_host`). Never writes.

A sweep's judgement reads its host's stored judged rows (their running state,
`running.py`) and only the results stored since the last judgement: the reports after the
newest one judged (`judged_report` in the host row's facts), then their measurements by
report, bounded in time so PostgreSQL reads only the newest day partitions. History is read
only to seed a key that has no state yet (a host's first sweep, a new pair, the rows of a
database migrated from before the state was stored) or when an operator asks for a
re-judgement: the look-back window's samples and each key's newest healthy values for its
baseline, each key through the (host, src, dst, test) index (migration 0033).
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Executable, bindparam, func, literal_column, select, union_all
from sqlalchemy.orm import Session

from peerwatch.app.analysis.fleet_peers import GroupKey
from peerwatch.app.analysis.health import Sample
from peerwatch.app.analysis.jobs import JobSpan
from peerwatch.app.analysis.nic_health import Reading
from peerwatch.app.analysis.throttle import SweepThrottle
from peerwatch.app.analysis.xid_judge import EventFact
from peerwatch.app.judging.expectations import CACHE_KEY, ExpectationCache, Expectations
from peerwatch.app.judging.running import sample, sample_us
from peerwatch.app.queries.common import pair_samples
from peerwatch.app.queries.counters import (
    aer_rates,
    link_rates,
    pcie_replay_rates,
    rate_window_start,
)
from peerwatch.app.queries.events import load_event_facts
from peerwatch.app.queries.fabric import load_fabric
from peerwatch.app.queries.fleet_peers import Stats, group_stats
from peerwatch.app.queries.jobs import host_spans
from peerwatch.app.queries.nics import nic_inventory, port_readings
from peerwatch.app.queries.page_holds import fabric_manager_of
from peerwatch.app.queries.throttle import throttle_history
from peerwatch.app.records.fabric import HostFabric
from peerwatch.app.records.keys import PairKey
from peerwatch.app.runtime.config import Settings
from peerwatch.app.services.fleet_peers import host_driver, host_models, pair_groups
from peerwatch.app.store import packed
from peerwatch.app.store.measurement_keys import of_keys, pair_keys
from peerwatch.app.store.tables.history import (
    Measurement,
    MeasurementKey,
    ReportRow,
    foreign_bytes_of,
)
from peerwatch.app.store.tables.inventory import Host
from peerwatch.probes.report import FabricManagerInfo, TestName

# A stored test name's member: TestName(name) is much slower than this lookup, which a kind
# declared only in `probes/test_kinds.py` (at run time) falls back to (`_test_of`).
TEST_OF = {t.value: t for t in TestName}
BATCH = 100  # keys per statement: well under SQLite's compound-select and variable limits
MARGIN = timedelta(days=1)  # a result measured before its report started (a skewed probe)

def _test_of(name: str) -> TestName:
    member = TEST_OF.get(name)
    return TestName(name) if member is None else member


def newest_report(session: Session, host_id: int) -> int | None:
    """The id of the host's newest stored report: where a seeded judgement has judged up to."""
    return session.scalar(select(func.max(ReportRow.id)).where(ReportRow.host_id == host_id))


def _unindexed(column: Any, sqlite: bool) -> Any:
    """`column` in a form no index serves, so that both planners take the report_id index
    for the new reports' rows (~416), whatever their statistics say: SQLite's `+column`
    (its planner once chose the key index and read every stored measurement of the host, a
    cost growing with the days stored); PostgreSQL's `column + 0` (without fresh statistics
    of the day's partition, as before autovacuum's analyze, its planner ANDed the
    report_id bitmap with the key index's, which reads all of the host's measurements of
    the day: a cost growing through the day).
    PostgreSQL keeps a plain time column: its bound prunes the day partitions."""
    if not sqlite:
        return column if column.name == "measured_at" else column + 0
    return literal_column(f"+{column.table.name}.{column.name}", column.type)


_NEW_REPORTS = select(ReportRow.id, ReportRow.started_at).where(
    ReportRow.host_id == bindparam("host"), ReportRow.id > bindparam("after"))


@functools.cache
def _new_measurements(sqlite: bool) -> Executable:
    """`new_results`' read of the new reports' pair-test samples, built once per backend
    (building it cost more than sending it)."""
    return select(
        MeasurementKey.src, MeasurementKey.dst, MeasurementKey.test, Measurement.measured_at,
        Measurement.value, Measurement.contended, Measurement.error, Measurement.foreign_bytes,
    ).join(MeasurementKey, MeasurementKey.id == _unindexed(Measurement.key_id, sqlite)).where(
        Measurement.report_id.in_(bindparam("ids", expanding=True)),
        MeasurementKey.host_id == bindparam("host"), MeasurementKey.src.is_not(None),
        _unindexed(Measurement.measured_at, sqlite) >= bindparam("since")
    ).order_by(Measurement.measured_at, Measurement.report_id)


def new_results(session: Session, host_id: int, after_report: int
                ) -> tuple[dict[PairKey, list[Sample]], int | None]:
    """(every pair-test sample of the reports stored after `after_report`, oldest first per
    key; the newest of those reports' ids, None when there is none)."""
    reports = session.execute(_NEW_REPORTS, {"host": host_id, "after": after_report}).all()
    if not reports:
        return {}, None
    ids = [pk for pk, _ in reports]
    since = min(at for _, at in reports) - MARGIN
    query = _new_measurements(session.get_bind().dialect.name == "sqlite")
    out: dict[PairKey, list[Sample]] = defaultdict(list)
    for src, dst, name, at, value, contended, error, foreign in session.execute(
            query, {"ids": ids, "host": host_id, "since": since}):
        assert src is not None and dst is not None  # the query asked for pair tests only
        out[(src, dst, _test_of(name))].append(
            sample(at, value, contended, error, foreign_bytes_of(foreign)))
    return out, max(ids)


def baseline_values(session: Session, host_id: int, keys: Iterable[PairKey], since: datetime,
                    until: datetime, per_key: int,
                    known: dict[int, tuple[int, int, str]] | None = None
                    ) -> dict[PairKey, list[tuple[datetime, float]]]:
    """The newest `per_key` judged (when, value)s of each key, oldest first, each read
    through the key_id index: on PostgreSQL the window's day partitions bound the time (a
    key has a row a sweep, 144 a day), the index does not hold it (0033: deduplicated,
    ~8 bytes a row instead of ~70)."""
    values: dict[PairKey, list[tuple[datetime, float]]] = defaultdict(list)
    wanted = set(keys)
    known = pair_keys(session, host_id) if known is None else known
    key_of = {pk: key for pk, (src, dst, name) in known.items()
              if (key := (src, dst, _test_of(name))) in wanted}
    ordered = sorted(key_of)
    for start in range(0, len(ordered), BATCH):
        parts = []
        for pk in ordered[start:start + BATCH]:
            newest = (
                select(Measurement.key_id, Measurement.measured_at, Measurement.value)
                .where(Measurement.key_id == pk,
                       Measurement.measured_at >= since, Measurement.measured_at <= until,
                       Measurement.error.is_(None), Measurement.contended.is_(False))
                .order_by(Measurement.measured_at.desc()).limit(per_key).subquery()
            )
            parts.append(select(newest))
        for pk, at, value in session.execute(union_all(*parts)):
            values[key_of[pk]].append((at, value))
    return {key: sorted(found) for key, found in values.items()}


def _nothing_between(session: Session, ids: list[int], since: datetime,
                     before: datetime) -> bool:
    """No measurement of the host's keys `ids` in [since, before). Then the history
    read from `before` on holds every row the baseline reads (a host younger than the
    look-back window: every new host's first sweeps, every host of a new fleet)."""
    if since >= before or not ids:
        return True
    found = session.scalar(select(Measurement.measured_at).where(
        of_keys(session, ids), Measurement.measured_at >= since,
        Measurement.measured_at < before).limit(1))
    return found is None


def baseline_from(history: dict[PairKey, list[Sample]], keys: Iterable[PairKey],
                  since: datetime, until: datetime, per_key: int
                  ) -> dict[PairKey, list[tuple[datetime, float]]]:
    """`baseline_values` worked out from samples already read (oldest first): the same rows
    (no error, uncontended, in [since, until]), the newest `per_key` of each key."""
    out: dict[PairKey, list[tuple[datetime, float]]] = {}
    for key in keys:
        found = [(s.at, s.value) for s in history.get(key, ())
                 if s.error is None and not s.contended and since <= s.at <= until]
        if found:
            out[key] = sorted(found[-per_key:])  # type: ignore[arg-type]
    return out


@dataclass
class TestInputs:
    """What the (pair, test) judgements of one sweep go on from."""

    __test__ = False  # not a pytest class

    states: dict[PairKey, bytes] = field(default_factory=dict)  # stored, packed, to carry on
    low_before: dict[PairKey, datetime] = field(default_factory=dict)  # stored low runs
    new: dict[PairKey, list[Sample]] = field(default_factory=dict)  # since the last judgement
    history: dict[PairKey, list[Sample]] = field(default_factory=dict)  # window, to seed
    values: dict[PairKey, list[tuple[datetime, float]]] = field(
        default_factory=dict)  # the baseline's, to seed
    seeded: set[PairKey] = field(default_factory=set)
    judged_report: int | None = None  # the newest report judged once these are


def load_tests(session: Session, host_id: int, stored: dict[tuple, dict[str, Any]],
               judged_report: int | None, window: tuple[datetime, datetime],
               baseline_since: datetime, per_key: int, reseed: bool = False) -> TestInputs:
    """The stored state of every judged (pair, test) and what is new since `judged_report`
    (None: nothing judged incrementally yet, so every key is seeded, as with `reseed`);
    `window`: the look-back window (since, until) a seeded key's samples come from."""
    out = TestInputs(judged_report=judged_report)
    stored_keys = set()
    for r in stored.values():
        key = (r["src"], r["dst"], TEST_OF[r["test"]])
        stored_keys.add(key)
        if r["low_since"] is not None:
            out.low_before[key] = r["low_since"]
        if r.get("state") is not None and not reseed:
            out.states[key] = r["state"]  # unpacked only where the general way needs it
    everything = judged_report is None or reseed
    if everything:  # the newest report first: one stored in between is judged again, not lost
        out.judged_report = newest_report(session, host_id)
        new: dict[PairKey, list[Sample]] = {}
        out.seeded = stored_keys
    else:
        assert judged_report is not None
        new, newest = new_results(session, host_id, judged_report)
        out.judged_report = newest or judged_report
        states = out.states  # a key without a state, or with results older than its state:
        out.seeded = {k for k in stored_keys if k not in states}  # (one pass over each set,
        for k, samples in new.items():  # no union of ~416 keys built and walked again)
            state = states.get(k)
            if state is None or _out_of_order(state, samples):
                out.seeded.add(k)
    if everything or out.seeded:
        known = pair_keys(session, host_id)  # one read of the host's keys for the three
        history = pair_samples(session, host_id, window[0], known=known)
        out.seeded |= set(history) if everything else set()
        out.history = {k: v for k, v in history.items() if k in out.seeded}
        if _nothing_between(session, list(known), baseline_since, window[0]):
            out.values = baseline_from(history, out.seeded, baseline_since, window[1], per_key)
        else:
            out.values = baseline_values(session, host_id, out.seeded, baseline_since,
                                         window[1], per_key, known)
    out.new = {k: v for k, v in new.items() if k not in out.seeded}
    return out


def fabric_of(session: Session, row: Host) -> tuple[HostFabric, Expectations]:
    """The host's fabric and per-key figures: those the app's cache kept for this
    inventory (`expectations.py`), else read and worked out on use (a session of no app)."""
    cache: ExpectationCache | None = session.info.get(CACHE_KEY)
    if cache is not None:
        return cache.fabric(session, row)
    fabric = load_fabric(session, row)
    return fabric, Expectations(fabric, {})


def _out_of_order(state: bytes, new: list[Sample] | None) -> bool:
    """A result older than what the key's state already holds: seed it from history."""
    newest = packed.newest_us(state)  # read from the bytes: nothing is unpacked for this
    return bool(new) and newest is not None and sample_us(new[0]) <= newest  # type: ignore[index]


@dataclass
class Loaded:
    """Everything one host's judgement reads, read before any of it is judged."""

    fabric: HostFabric
    tests: TestInputs | None  # None: no sweep since the last judgement, its tests reused
    link_rates: dict[tuple[int, int], dict[str, float | None]]
    pcie_replays: dict[int, float | None]
    peer_groups: dict[tuple[int, int], GroupKey]
    peer_stats: Stats
    peer_basis: dict[str, Any]  # the host's stamp of its groups' last material change
    fabric_manager: FabricManagerInfo | None
    expectations: Expectations  # each key's figures from the fabric (expectations.py)
    events: list[EventFact] = field(default_factory=list)  # recent Xid/SXid (judging/events.py)
    # GPU -> its throttle in each newest sweep, newest first (app/queries/throttle.py)
    throttles: dict[int, list[SweepThrottle | None]] = field(default_factory=dict)
    jobs: list[JobSpan] = field(default_factory=list)  # over the look-back
    # GPU -> PCIe AER growth per second by kind (app/analysis/gpu_health.py)
    aer_rates: dict[int, dict[str, float | None]] = field(default_factory=dict)
    # RDMA NIC ports' readings over the rate window, and each NIC's type (nic_health.py)
    nic_readings: dict[tuple[str, int], list[Reading]] = field(default_factory=dict)
    nic_types: dict[str, str | None] = field(default_factory=dict)


def load_host(session: Session, settings: Settings, row: Host, now: datetime,
              stored_tests: dict[tuple, dict[str, Any]], judged_report: int | None,
              reuse: bool, reseed: bool = False) -> Loaded:
    """Read what judging `row` at `now` needs: its fabric, the (pair, test) inputs (unless
    `reuse`), its counters' rates, its fleet peer groups' stats, its Fabric Manager."""
    fabric, expectations = fabric_of(session, row)
    tests = None
    lookback = max(settings.health_lookback_s, 2 * settings.degraded_sustain_s)
    newest = row.last_sweep_at or row.last_report_at or now
    window = (newest - timedelta(seconds=lookback), newest)
    if not reuse:
        tests = load_tests(session, row.id, stored_tests, judged_report, window,
                           newest - timedelta(seconds=settings.baseline_window_s),
                           settings.baseline_max_samples, reseed)
    # which jobs held the GPUs: the sweep's look-back, up to the newest report of any kind
    jobs = host_spans(session, row.id, window[0], max(newest, row.last_report_at or newest))
    since = rate_window_start(session, row.id, (row.last_report_at or now)
                              - timedelta(seconds=settings.link_rate_window_s),
                              settings.stale_after_s)
    stamp = row.peers_changed_at  # read with the host row, before the stats: a recompute in
    # between costs a re-judge, never a missed one
    return Loaded(
        fabric=fabric, tests=tests, link_rates=link_rates(session, row.id, since),
        pcie_replays=pcie_replay_rates(session, row.id, since),
        aer_rates=aer_rates(session, row.id, since),
        nic_readings=port_readings(session, row.id, since),
        nic_types={n["name"]: n.get("hca_type") for n in nic_inventory(session, row.id)},
        peer_groups=pair_groups(row, fabric),
        peer_stats=group_stats(session, host_models(fabric), host_driver(row)),
        peer_basis={"changed_at": stamp.isoformat() if stamp else None},
        fabric_manager=fabric_manager_of(session, row),
        expectations=expectations,
        events=load_event_facts(session, row.id, now),
        throttles=throttle_history(session, row.id, settings.throttle_sweeps_of), jobs=jobs)
