"""Repeated agent warnings: one line per kind per minute with a count, the first at once.

The clock is injected (tests/probes/fakeclock.py): minutes pass without a sleep."""

from __future__ import annotations

import logging

import pytest

from peerwatch.probes.agent.quiet_log import QuietLog
from tests.probes.fakeclock import FakeClock

BUSY, LOST = "server busy (HTTP 503)", "server unreachable (no answer)"


def _quiet() -> tuple[QuietLog, FakeClock]:
    clock = FakeClock()
    return QuietLog(logging.getLogger("peerwatch.probes.agent.test"), clock), clock


def _lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "peerwatch.probes.agent.test"]


def test_one_line_per_kind_per_minute_with_a_count(caplog: pytest.LogCaptureFixture) -> None:
    quiet, clock = _quiet()
    with caplog.at_level(logging.WARNING, "peerwatch.probes.agent.test"):
        assert quiet.warning(BUSY, "busy: report %d", 0)  # the first: at once, in full
        for i in range(1, 38):
            clock.advance(1.0)
            assert not quiet.warning(BUSY, "busy: report %d", i)
        assert quiet.warning(LOST, "no answer: report %d", 38)  # another kind: at once
        clock.advance(23.0)  # 60 s after the first
        quiet.tick()
    assert _lines(caplog) == ["busy: report 0", "no answer: report 38",
                              f"{BUSY} x37 in the last 60 s; latest: busy: report 37"]


def test_a_steady_stream_is_one_count_line_a_minute(caplog: pytest.LogCaptureFixture) -> None:
    quiet, clock = _quiet()
    with caplog.at_level(logging.WARNING, "peerwatch.probes.agent.test"):
        for second in range(180):  # three minutes, a refusal a second
            quiet.warning(BUSY, "busy at %d s", second)
            clock.advance(1.0)
    assert _lines(caplog) == ["busy at 0 s",
                              f"{BUSY} x59 in the last 60 s; latest: busy at 59 s",
                              f"{BUSY} x60 in the last 60 s; latest: busy at 119 s"]


def test_a_kind_quiet_for_a_whole_window_is_written_at_once_again(
        caplog: pytest.LogCaptureFixture) -> None:
    quiet, clock = _quiet()
    with caplog.at_level(logging.WARNING, "peerwatch.probes.agent.test"):
        quiet.warning(BUSY, "first")
        clock.advance(61.0)
        assert quiet.warning(BUSY, "again, after a quiet minute")
    assert _lines(caplog) == ["first", "again, after a quiet minute"]


def test_counts_held_back_are_not_lost_when_the_warnings_stop(
        caplog: pytest.LogCaptureFixture) -> None:
    """`flush` (the server answers again, or the probe stops) writes what was counted, and
    the next warning is written at once."""
    quiet, clock = _quiet()
    with caplog.at_level(logging.WARNING, "peerwatch.probes.agent.test"):
        quiet.warning(BUSY, "busy 1")
        clock.advance(5.0)
        quiet.warning(BUSY, "busy 2")
        clock.advance(5.0)
        quiet.warning(BUSY, "busy 3")
        quiet.flush()
        quiet.flush()  # nothing held: nothing more
        assert quiet.warning(BUSY, "busy 4")
    assert _lines(caplog) == ["busy 1", f"{BUSY} x2 in the last 10 s; latest: busy 3",
                              "busy 4"]
