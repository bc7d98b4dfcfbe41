"""Growth per second of the cumulative NVLink and PCIe counters over a window, per link or
GPU: what the link and GPU judges read (by rate, never by lifetime size).

The link and PCIe replay rates are computed by the database (window functions: each
reading minus the one before it, a reset counting as growth from zero, as
`app.analysis.rates.rate_per_s` does), so a judgement reads one row per link or GPU, not
every reading of the window.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Select, and_, bindparam, case, func, select, true, tuple_
from sqlalchemy.orm import Session

from peerwatch.app.analysis.gpu_health import AER_COLUMNS
from peerwatch.app.store.tables.history import LINK_IDLE_KEYFRAME_S, GpuSample, LinkSample

COUNTERS = ("tx_bytes", "rx_bytes", "replay", "recovery", "crc_flit", "crc_data", "ecc_data")
JUDGED = ("replay", "recovery", "crc_flit")  # what `app.analysis.fabric_health` judges


def link_rates(session: Session, host_id: int, since: datetime,
               counters: Sequence[str] = JUDGED) -> dict[tuple[int, int], dict[str, float | None]]:
    """Growth per second of `counters` of every link since `since` (None: fewer than two
    readings), over the host's readings from `since` on.

    The link rows are sparse (app/ingest/sparse_links.py): a reading equal in its error
    counters to the port's stored row before is not stored, except at keyframes. So each
    port's value at the window's first reading is its newest row at or before it, which a
    keyframe puts at most LINK_IDLE_KEYFRAME_S back, growth is counted on the steps that end
    after that reading, and every rate spans the host's readings in the window, first to
    last, as each port's did when every reading was kept (a port unmoved all along grew 0)."""
    first, last = host_readings_span(session, host_id, since)
    if first is None or last is None:
        return {}
    reach = first - timedelta(seconds=LINK_IDLE_KEYFRAME_S)
    rows = _growth(session, "link", tuple(counters), {"host": host_id, "since": reach},
                   after=first, sparse=True)
    span = (None, None) if first == last else (first, last)
    out: dict[tuple[int, int], dict[str, float | None]] = {}
    for gpu, link, *values in rows:
        out[(gpu, link)] = {c: _rate(values[3 * i], *span) for i, c in enumerate(counters)}
    return out


def host_readings_span(session: Session, host_id: int, since: datetime
                       ) -> tuple[datetime | None, datetime | None]:
    """The first and last time the host's counters were read from `since` on: its GPU rows
    (one per GPU and reading) and its link rows (a keyframe's, or a moved port's)."""
    spans = [session.execute(query, {"host": host_id, "since": since}).one()
             for query in _SPANS]
    firsts = [_aware(f) for f, _ in spans if f is not None]
    lasts = [_aware(la) for _, la in spans if la is not None]
    return (min(firsts) if firsts else None), (max(lasts) if lasts else None)


# The rows each rate reads, bound by "host" and "since": (their table, what a rate is
# per, the criteria): a host's link rows; its GPU rows with a PCIe replay count; with AER
# counts. Each statement over them is built once (`_unmoved_query`, `_stepped_query`):
# building one of these selects cost more than the database's answer.
_SOURCES: dict[str, tuple[Any, tuple[Any, ...], tuple[Any, ...]]] = {
    "link": (LinkSample, (LinkSample.gpu, LinkSample.link),
             (LinkSample.host_id == bindparam("host"), LinkSample.at >= bindparam("since"))),
    "pcie": (GpuSample, (GpuSample.gpu,),
             (GpuSample.host_id == bindparam("host"), GpuSample.at >= bindparam("since"),
              GpuSample.pcie_replay.is_not(None))),
    "aer": (GpuSample, (GpuSample.gpu,),
            (GpuSample.host_id == bindparam("host"), GpuSample.at >= bindparam("since"),
             GpuSample.aer_correctable.is_not(None))),
}
# the first and last reading from "since" on, of the GPU rows and of the link rows
_SPANS = [select(func.min(m.at), func.max(m.at)).where(
    m.host_id == bindparam("host"), m.at >= bindparam("since")) for m in (GpuSample, LinkSample)]
# the newest reading in ["reach", "since"), of each
_BEFORE = [select(func.max(m.at)).where(
    m.host_id == bindparam("host"), m.at < bindparam("since"), m.at >= bindparam("reach"))
    for m in (GpuSample, LinkSample)]


def _growth(session: Session, source: str, counters: tuple[str, ...], params: dict[str, Any],
            after: datetime | None = None, sparse: bool = False) -> list[Any]:
    """Per partition of `source` (`_SOURCES`; its columns first), each counter's (growth,
    first, last) over its rows bound by `params`: each reading minus the one before it (a
    reset counts as growth from zero), summed over the steps forward in time, and when the
    first counted step began and the last ended (`app.analysis.rates.rate_per_s`, in the
    database).

    Most counters do not move at all over a window (a healthy link's errors), and for those
    the answer follows from plain aggregates, exactly: `_unmoved` reads them first (one
    grouped scan, no window function), and only the partitions with a counter that moved or was
    not read every time go through the window functions (`_stepped_query`), which cost time per
    reading on SQLite (an 8-GPU host's 900 s window holds ~4,600 link readings).

    `after`: only the steps ending after it count (the rows before it give each partition's
    value there). `sparse`: a reading left out repeats the one before, so a counter read at
    all grew 0 where no step of it counts (the caller spans the rates)."""
    unmoved, moved = _unmoved(session, source, counters, params, sparse=sparse)
    if moved:
        query = _stepped_query(source, counters, after is not None, sparse)
        width = len(_SOURCES[source][1])
        unmoved += list(session.execute(query, {
            **params, "after": after,
            "moved": moved if width > 1 else [k[0] for k in moved]}))
    return unmoved


@functools.cache
def _unmoved_query(source: str, counters: tuple[str, ...]) -> Select[Any]:
    model, partition, where = _SOURCES[source]
    stats = [agg(getattr(model, c)) for c in counters for agg in (func.count, func.min, func.max)]
    return select(*partition, func.count(), func.min(model.at), func.max(model.at),
                  *stats).where(*where).group_by(*partition)


def _unmoved(session: Session, source: str, counters: tuple[str, ...], params: dict[str, Any],
             sparse: bool = False) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """(the rows `_stepped_query` would give for the partitions whose every counter was read
    every time and never changed, the other partitions' keys). For such a counter every step
    grows by 0; a step counts when it moves forward in time, so there is one exactly when
    two readings differ in time, the first beginning at the earliest reading and the last
    ending at the newest: growth 0 from min(at) to max(at), or none (all at one time)."""
    width = len(_SOURCES[source][1])
    unmoved, moved = [], []
    for row in session.execute(_unmoved_query(source, counters), params):
        key, (n, first, last), values = row[:width], row[width:width + 3], row[width + 3:]
        if any(values[i] != n or values[i + 1] != values[i + 2]
               for i in range(0, len(values), 3)):
            moved.append(tuple(key))
            continue
        step = (0, first, last) if first != last or sparse else (None, None, None)
        unmoved.append((*key, *(step * len(counters))))
    return unmoved, moved


@functools.cache
def _stepped_query(source: str, counters: tuple[str, ...], after: bool, sparse: bool
                   ) -> Select[Any]:
    """`_growth` by window functions, for the partitions bound as "moved" (and the steps
    ending after "after", when `after`): each reading minus the one before it."""
    model, partition, where = _SOURCES[source]

    def previous(column: Any) -> Any:
        return func.lag(column).over(partition_by=partition, order_by=model.at)  # a reading a time

    cols = [*partition, model.at, previous(model.at).label("prev_at")]
    for c in counters:
        now, before = getattr(model, c), previous(getattr(model, c))
        cols.append(case((before.is_(None), None), (now >= before, now - before),
                         else_=now).label(c))
    keys_of = tuple_(*partition) if len(partition) > 1 else partition[0]
    steps = select(*cols).where(*where, keys_of.in_(bindparam("moved", expanding=True))
                                ).subquery()
    aggregates = []
    for c in counters:
        counted = and_(steps.c[c].is_not(None), steps.c.at > steps.c.prev_at,
                       steps.c.at > bindparam("after", type_=model.at.type) if after
                       else true())
        grown: Any = func.sum(case((counted, steps.c[c])))
        if sparse:  # read at all: 0 where no step counts
            grown = case((func.count(steps.c[c]) > 0, func.coalesce(grown, 0)))
        aggregates += [grown,
                       func.min(case((counted, steps.c.prev_at))),
                       func.max(case((counted, steps.c.at)))]
    keys = [steps.c[col.key] for col in partition]
    return select(*keys, *aggregates).group_by(*keys)


def _rate(growth: int | None, first: datetime | str | None,
          last: datetime | str | None) -> float | None:
    if growth is None or first is None or last is None:
        return None
    span = (_aware(last) - _aware(first)).total_seconds()
    return float(growth) / span if span > 0 else None


def _aware(at: datetime | str) -> datetime:
    """SQLite hands aggregated timestamps back as text; PostgreSQL as aware datetimes."""
    if isinstance(at, str):
        at = datetime.fromisoformat(at)
    return at if at.tzinfo else at.replace(tzinfo=UTC)


def rate_window_start(session: Session, host_id: int, since: datetime,
                      gap_s: float) -> datetime:
    """Where a host's rate window starts: at `since`, or at the newest reading before it
    when that is at most `gap_s` older. A window always reaches back to the reading before
    it, so a report gap longer than the window (but shorter than the staleness limit) still
    measures the growth across the gap instead of reading "no rate": a link whose errors
    kept growing stays degraded and its alert does not resolve and fire again as new."""
    befores = [session.scalar(query, {"host": host_id, "since": since,
                                      "reach": since - timedelta(seconds=gap_s)})
               for query in _BEFORE]  # the host's readings: see host_readings_span
    found = [_aware(b) for b in befores if b is not None]
    return min(since, max(found)) if found else since


def aer_rates(session: Session, host_id: int, since: datetime
              ) -> dict[int, dict[str, float | None]]:
    """Each GPU's PCIe AER growth per second since `since`, per kind (correctable,
    nonfatal, fatal: the GPU and its bridge together), as the PCIe replay rates are."""
    rows = _growth(session, "aer", tuple(AER_COLUMNS.values()),
                   {"host": host_id, "since": since})
    return {gpu: {kind: _rate(*values[3 * i:3 * i + 3]) for i, kind in enumerate(AER_COLUMNS)}
            for gpu, *values in rows}


def pcie_replay_rates(session: Session, host_id: int, since: datetime) -> dict[int, float | None]:
    """Each GPU's PCIe replay growth per second since `since`, over its readings that have
    the counter (a GPU with none reads None, as one absent does); computed by the database
    as the link rates are, one row per GPU."""
    rows = _growth(session, "pcie", ("pcie_replay",), {"host": host_id, "since": since})
    return {gpu: _rate(growth, first, last) for gpu, growth, first, last in rows}
