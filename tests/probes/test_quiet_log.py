"""Repeated agent warnings: one line per kind per minute, the next one counting the rest."""

from __future__ import annotations

import logging

import pytest

from probes.agent.quiet_log import QuietLog
from tests.probes.fakeclock import FakeClock


def test_one_line_per_kind_per_minute_with_a_count(caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock()
    quiet = QuietLog(logging.getLogger("probes.agent.test"), clock)
    with caplog.at_level(logging.WARNING, "probes.agent.test"):
        assert quiet.warning("unavailable 503", "server unavailable (%s)", "HTTP 503")
        for _ in range(37):
            clock.advance(1.0)
            assert not quiet.warning("unavailable 503", "server unavailable (%s)", "HTTP 503")
        assert quiet.warning("unavailable 429", "server unavailable (%s)", "HTTP 429")
        clock.advance(30.0)
        assert quiet.warning("unavailable 503", "server unavailable (%s)", "HTTP 503")
    lines = [r.getMessage() for r in caplog.records]
    assert lines == ["server unavailable (HTTP 503)", "server unavailable (HTTP 429)",
                     "server unavailable (HTTP 503) (and 37 more like it in the last 67 s)"]
