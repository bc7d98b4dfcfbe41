"""app/analysis/debounce.py: when pages wait (maintenance, settling) and when they do not."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from peerwatch.app.analysis.debounce import Window, active_window, page_hold

T = datetime(2026, 12, 1, 10, tzinfo=UTC)
MIN = timedelta(minutes=1)


def test_windows_cover_their_span_only() -> None:
    w = Window(T, T + 60 * MIN, "cable swap", 1)
    assert active_window([w], T - MIN) is None
    assert active_window([w], T) == w
    assert active_window([w], T + 60 * MIN) is None  # the end is exclusive
    longer = Window(T - MIN, T + 90 * MIN)
    assert active_window([w, longer], T + MIN) == longer  # the one ending last


def test_maintenance_hold_names_the_end_and_why() -> None:
    hold = page_hold(T + MIN, [Window(T, T + 120 * MIN, "NVSwitch tray")], 300)
    assert hold is not None and hold.kind == "maintenance"
    assert hold.reason == "in maintenance until 2026-12-01 12:00 UTC (NVSwitch tray)"


def test_settling_after_the_newest_start() -> None:
    hold = page_hold(T + 2 * MIN, [], 300, probe_started_at=T - 60 * MIN, driver_loaded_at=T)
    assert hold is not None and hold.kind == "settling"
    assert hold.until == T + 5 * MIN
    assert hold.reason.startswith("settling: driver loaded 2 min ago")
    assert page_hold(T + 5 * MIN, [], 300, driver_loaded_at=T) is None
    assert page_hold(T + MIN, [], 0, driver_loaded_at=T) is None  # settle time off
    assert page_hold(T, [], 300) is None  # an older probe reports no start: pages as usual


def test_maintenance_wins_over_settling() -> None:
    hold = page_hold(T + MIN, [Window(T, T + 60 * MIN)], 300, probe_started_at=T)
    assert hold is not None and hold.kind == "maintenance"
