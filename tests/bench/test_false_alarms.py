"""The fleet bench's false-alarm count: a stale alert is true while the probe was silent and
false once the probe tried again and the server kept saying it was silent."""

from __future__ import annotations

from bench.helpers.false_alarms import GRACE_S, Raised, false_alarms, is_false

STALE_S = 90.0


def stale(active_from: float, active_to: float) -> Raised:
    return Raised("ProbeStale", "h", active_from, active_to, "")


def test_stale_while_the_probe_really_was_silent_is_true() -> None:
    # warm-up at 0, silent until the load's first attempt at 200; resolved soon after
    assert not is_false(stale(91.0, 200.0 + GRACE_S - 1), [0.0, 200.0], STALE_S)


def test_stale_that_outlives_the_probes_return_is_false() -> None:
    assert is_false(stale(91.0, 230.0), [0.0, 200.0], STALE_S)


def test_stale_raised_while_the_probe_kept_trying_is_false() -> None:
    tries = [float(t) for t in range(0, 300, 30)]
    assert is_false(stale(150.0, 160.0), tries, STALE_S)


def test_stale_raised_near_the_limit_after_the_last_attempt_is_not_counted() -> None:
    assert not is_false(stale(STALE_S - GRACE_S + 1, 120.0), [0.0], STALE_S)


def test_every_clock_skew_alert_is_false_and_hosts_are_told_apart() -> None:
    skew = Raised("ProbeClockSkew", "a", 10.0, 20.0, "")
    other = Raised("ProbeStale", "b", 150.0, 160.0, "")  # b never tried: silent, true
    assert false_alarms([skew, other], {"a": [0.0, 5.0]}, STALE_S) == [skew]


def test_only_what_an_alert_said_in_the_measured_window_counts() -> None:
    tries = [float(t) for t in range(0, 300, 30)]
    assert not is_false(stale(150.0, 160.0), tries, STALE_S, measured_from=200.0)
    assert is_false(stale(150.0, 260.0), tries, STALE_S, measured_from=200.0)
