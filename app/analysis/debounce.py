"""When a page must wait: faults are expected inside a maintenance window and while links
still train after the probe or the driver started (operators have had hundreds of
NVLINK_DOWN pages that were just planned reboots).

Pure: the caller passes the host's declared windows and start times. A hold never changes a
verdict or an alert's state (both are still computed and shown); it only keeps the page from
being sent, and says why in words.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from peerwatch.app.analysis.text import fmt_duration


@dataclass(frozen=True)
class Window:
    starts_at: datetime
    ends_at: datetime
    comment: str = ""
    id: int | None = None


@dataclass(frozen=True)
class Hold:
    """Why pages of a host wait, and until when."""

    kind: str  # "maintenance" | "settling"
    until: datetime
    reason: str


def active_window(windows: Sequence[Window], now: datetime) -> Window | None:
    """The window covering `now` that ends last (None outside every window)."""
    covering = [w for w in windows if w.starts_at <= now < w.ends_at]
    return max(covering, key=lambda w: w.ends_at, default=None)


def settling(now: datetime, settle_s: float, probe_started_at: datetime | None,
             driver_loaded_at: datetime | None) -> Hold | None:
    """A hold while either start is younger than `settle_s` (clocks: the probe's own)."""
    starts = [(at, what) for at, what in ((driver_loaded_at, "driver loaded"),
                                          (probe_started_at, "probe started")) if at]
    if settle_s <= 0 or not starts:
        return None
    at, what = max(starts, key=lambda s: s[0])
    until = at + timedelta(seconds=settle_s)
    if not now < until:
        return None
    ago = max(0.0, (now - at).total_seconds())
    return Hold("settling", until, f"settling: {what} {fmt_duration(ago)} ago, links may "
                                   f"still be training (pages wait {fmt_duration(settle_s)})")


def page_hold(now: datetime, windows: Sequence[Window], settle_s: float,
              probe_started_at: datetime | None = None,
              driver_loaded_at: datetime | None = None) -> Hold | None:
    """Why pages of a host wait now, or None: maintenance first, then settling."""
    window = active_window(windows, now)
    if window is not None:
        note = f" ({window.comment})" if window.comment else ""
        return Hold("maintenance", window.ends_at,
                    f"in maintenance until {window.ends_at:%Y-%m-%d %H:%M} UTC{note}")
    return settling(now, settle_s, probe_started_at, driver_loaded_at)
