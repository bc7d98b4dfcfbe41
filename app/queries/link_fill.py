"""The NVLink readings a sparse `link_samples` left out, put back for the link charts
(`link_series`): where the stored rows say what a left-out reading read, a chart reads it.

Ingest leaves out a port's reading that repeats its stored row before in every error
counter, and in its tx/rx bytes too unless that row is under LINK_KEYFRAME_S old
(app/ingest/sparse_links.py). So a reading left out is known to repeat that row where
- the port's next row reads the same (counters only grow: nothing moved in between), or
- there is no next row, and a reading LINK_KEYFRAME_S or more after the row was left out
  (a moved port would have been written there): every reading up to that one repeats it.
Elsewhere (a moving port between its keyframes) the gap stays a gap, spanned by the step
to the next row, as before. A port's reading times are its GPU's (`gpu_samples` keeps
every reading); a chart needs only the first in the window and the last of each bucket,
since a bucket's rate is its steps' growth over the time they span, which the readings in
between, repeats all, add nothing to.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable
from datetime import datetime, timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from peerwatch.app.store.tables.history import LINK_IDLE_KEYFRAME_S, LINK_KEYFRAME_S, LinkSample

KEYFRAME = timedelta(seconds=LINK_KEYFRAME_S)
IDLE_KEYFRAME = timedelta(seconds=LINK_IDLE_KEYFRAME_S)
Row = tuple  # (at, *counters)


def chart_times(times: Iterable[datetime], step: int) -> list[datetime]:
    """Of a GPU's reading times in a window, those a chart needs: the first, and the last
    of each `step`-second bucket."""
    ordered = sorted(set(times))
    return [t for i, t in enumerate(ordered)
            if i in (0, len(ordered) - 1) or _bucket(ordered[i + 1], step) != _bucket(t, step)]


def filled(rows: list[Row], times: list[datetime], since: datetime) -> list[Row]:
    """A port's rows (oldest first; the first may stand before `since`, carried in) from
    `since` on, with the readings at `times` (sorted) known to repeat a row put in."""
    out: list[Row] = []
    for i, row in enumerate(rows):
        if row[0] >= since:
            out.append(row)
        following = rows[i + 1] if i + 1 < len(rows) else None
        out += [(t, *row[1:]) for t in repeats(row, following, times) if t >= since]
    return out


def repeats(row: Row, following: Row | None, times: list[datetime]) -> list[datetime]:
    """The reading times after `row` known to repeat it (see the module's docstring)."""
    start = bisect_right(times, row[0])
    if following is not None:
        if tuple(following[1:]) != tuple(row[1:]):
            return []
        return times[start:bisect_left(times, following[0])]
    if not times or times[-1] < row[0] + KEYFRAME:
        return []
    return times[start:]


def carried_rows(session: Session, host_id: int, since: datetime, columns: tuple[str, ...],
                 wanted: set[tuple[int, int]]) -> dict[tuple[int, int], Row]:
    """Each `wanted` port's newest row before `since` (at most LINK_IDLE_KEYFRAME_S before
    it): the last LINK_KEYFRAME_S first, where a moving port has one, and the rest of the
    range only for the ports it lacks."""
    found = _newest(session, host_id, since - KEYFRAME, since, columns, wanted)
    if wanted - found.keys():
        older = _newest(session, host_id, since - IDLE_KEYFRAME, since - KEYFRAME, columns,
                        wanted - found.keys())
        found = {**older, **found}
    return found


def _newest(session: Session, host_id: int, start: datetime, end: datetime,
            columns: tuple[str, ...], wanted: set[tuple[int, int]]
            ) -> dict[tuple[int, int], Row]:
    """Each `wanted` port's newest row in [start, end)."""
    query = (select(LinkSample.gpu, LinkSample.link, LinkSample.at,
                    *(getattr(LinkSample, c) for c in columns))
             .where(LinkSample.host_id == host_id, LinkSample.at >= start,
                    LinkSample.at < end)
             .order_by(LinkSample.at, LinkSample.gpu, LinkSample.link))
    return {(g, k): tuple(values) for g, k, *values in session.execute(query)
            if (g, k) in wanted}


def _bucket(at: datetime, step: int) -> int:
    return int(at.timestamp()) // step
