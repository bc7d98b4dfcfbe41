"""The time range and bucket step of a series request, checked the same way for every series.

Both the pair series and the link series take `since`, `until` and `step`, default a range
ending now, choose a step when none is given and refuse a range that would need more buckets
than a browser should draw; one function keeps the rules and their messages identical.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

MAX_BUCKETS = 2_000


@dataclass(frozen=True)
class Window:
    since: datetime
    until: datetime
    step: int

    @property
    def span_s(self) -> float:
        return (self.until - self.since).total_seconds()


def time_window(since: datetime | None, until: datetime | None, step: int | None,
                default_span: timedelta, default_step: Callable[[float], int]) -> Window:
    """`until` defaults to now, `since` to `default_span` before it, `step` to
    `default_step(span_s)`. Raises ValueError for an empty range or too many buckets."""
    until = until or datetime.now(UTC)
    since = since or until - default_span
    span = (until - since).total_seconds()
    if span <= 0:
        raise ValueError("since must be before until")
    step = step or default_step(span)
    if span / step > MAX_BUCKETS:
        raise ValueError(f"{span / step:.0f} buckets requested; at most {MAX_BUCKETS}: "
                         "use a larger step")
    return Window(since, until, step)
