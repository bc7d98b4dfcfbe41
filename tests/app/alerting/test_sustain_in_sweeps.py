"""Where a sweep is the unit, the sustain is counted in sweeps, so a fault
is detected at the same sweep whatever the agent's jitter. The per-GPU copy tests' 600 s
sustain equals the 600 s sweep interval: by time alone, sweeps 570 s apart needed a 3rd low
sweep and sweeps 630 s apart a 2nd. Both judged here with jittered timestamps both ways, in
the pure judge and through the server (reports built in the test from a simulated host)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy.orm import Session, sessionmaker

from peerwatch.app.analysis.expected import Expectation
from peerwatch.app.analysis.health import Sample, Thresholds, judge_test
from peerwatch.app.analysis.verdict import Verdict
from peerwatch.app.runtime.config import Settings
from peerwatch.probes.report import TestName, Unit
from peerwatch.probes.sim.faults import HostCopySlow
from tests.app.alerting.simhost import SimHost

T0 = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)
EXPECT = Expectation(50e9, Unit.BYTES_PER_SECOND, "PCIe Gen5 x16 x 0.88")
JITTERS = {"early": [-30.0], "late": [30.0], "both": [30.0, -30.0], "none": [0.0],
           "wide": [-30.0, 30.0, 30.0, -30.0, 0.0]}


def _times(n: int, jitter: list[float], interval: float = 600.0) -> list[datetime]:
    out, at = [], T0
    for i in range(n):
        out.append(at)
        at += timedelta(seconds=interval + jitter[i % len(jitter)])
    return out


def _first_degraded(jitter: list[float], healthy: int = 6) -> int:
    """The faulty sweep (1-based) at which the per-GPU h2d test is first degraded."""
    values = [48e9] * healthy + [20e9] * 6
    times = _times(len(values), jitter)
    for n in range(healthy + 1, len(values) + 1):
        samples = [Sample(at, v) for at, v in zip(times[:n], values[:n], strict=True)]
        j = judge_test(2, 2, TestName.H2D, samples, EXPECT, None, Thresholds())
        if j.verdict is Verdict.DEGRADED:
            return n - healthy
    raise AssertionError("never degraded")


@pytest.mark.parametrize("name", sorted(JITTERS))
def test_the_judge_detects_at_the_second_low_sweep_whatever_the_jitter(name: str) -> None:
    assert _first_degraded(JITTERS[name]) == 2


def test_one_low_sweep_is_still_watched_not_degraded() -> None:
    times = _times(7, [-30.0])
    samples = [Sample(at, 48e9) for at in times[:-1]] + [Sample(times[-1], 20e9)]
    j = judge_test(2, 2, TestName.H2D, samples, EXPECT, None, Thresholds())
    assert j.verdict is Verdict.HEALTHY and "degraded after 10 min" in j.reason


def test_a_sustain_of_several_sweeps_counts_that_many() -> None:
    """A 30-min sustain with sweeps 570 s apart is 3 gaps: the 4th low sweep (by time alone
    the 5th: three gaps of 570 s are 28.5 min)."""
    values = [48e9] * 6 + [20e9] * 6
    times = _times(len(values), [-30.0])
    th = Thresholds(sustain_s=1800.0, intermittent_low=9, intermittent_of=9)
    first = next(n for n in range(7, 13) if judge_test(
        2, 2, TestName.H2D, [Sample(a, v) for a, v in zip(times[:n], values[:n], strict=True)],
        EXPECT, None, th).verdict is Verdict.DEGRADED)
    assert first - 6 == 4


@pytest.mark.parametrize("jitter", [-30.0, 30.0], ids=["570s", "630s"])
def test_the_server_pages_a_slow_host_copy_at_the_second_faulty_sweep(
        sessions: sessionmaker[Session], sqlite_settings: Settings, jitter: float) -> None:
    host = SimHost(sessions, sqlite_settings)
    for _ in range(6):
        host.step(600 + jitter, "sweep")
    host.inject(HostCopySlow(gpu=1, factor=0.4))
    fired_at = None
    for sweep in range(1, 5):
        host.step(600 + jitter, "sweep")
        if fired_at is None and "PCIeBandwidthDegraded" in host.firing():
            fired_at = sweep
    assert fired_at == 2
