"""The loop's schedule on a fake clock: intervals, jitter bounds, isolation of failing steps.

The server here is absent (a loopback port nobody listens on): every report must end up in
the spool, and the schedule must not care.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

import pytest

from peerwatch.probes.agent.outbox import Outbox
from peerwatch.probes.agent.sender import Backoff, Sender
from peerwatch.probes.agent.spool import Spool
from peerwatch.probes.agent.worker import Worker, process_usage
from peerwatch.probes.config import ProbeSettings
from peerwatch.probes.report import Report, ReportKind
from tests.probes.fakeclock import FakeClock
from tests.probes.sample_reports import sample_report


def dead_url() -> str:
    """A loopback URL that refuses connections: the port was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


class RecordingBuilder:
    """Builds sample reports and notes when each kind was asked for."""

    def __init__(self, clock: FakeClock, fail_every: int = 0) -> None:
        self.clock = clock
        self.calls: list[tuple[ReportKind, float]] = []
        self.fail_every = fail_every

    def __call__(self, kind: ReportKind) -> Report:
        self.calls.append((kind, self.clock.now))
        if self.fail_every and len(self.calls) % self.fail_every == 0:
            raise RuntimeError("NVML exploded")
        return sample_report().model_copy(update={"kind": kind})

    def times(self, kind: ReportKind) -> list[float]:
        return [t for k, t in self.calls if k is kind]


def make_worker(tmp_path: Path, clock: FakeClock, build, seed: int = 1, **overrides) -> Worker:
    settings = ProbeSettings(server_url=dead_url(), token="t", spool_dir=tmp_path, **overrides)
    outbox = Outbox(Sender(settings.server_url, "t", 1.0), Spool(tmp_path, 1 << 24),
                    Backoff(settings.backoff_initial_s, settings.backoff_max_s,
                            random.Random(seed)), clock)
    return Worker(build, outbox, settings, clock=clock, sleep=clock.sleep,
                  rng=random.Random(seed))


def test_inventory_every_interval_and_sweeps_within_jitter(tmp_path: Path) -> None:
    clock = FakeClock()
    build = RecordingBuilder(clock)
    worker = make_worker(tmp_path, clock, build, inventory_interval_s=30, sweep_interval_s=600,
                         sweep_jitter_s=60)
    start = clock.now
    worker.run(until=start + 2 * 3600)
    sweeps = build.times(ReportKind.SWEEP)
    inventories = build.times(ReportKind.INVENTORY)
    assert 0 <= sweeps[0] - start <= 60
    gaps = [b - a for a, b in zip(sweeps, sweeps[1:], strict=False)]
    assert len(sweeps) >= 10 and all(600 <= g <= 660 for g in gaps)
    assert len(set(gaps)) > 1  # jittered, not lockstep
    assert inventories[0] == start
    every = sorted(inventories + sweeps)  # a sweep report carries the inventory too
    assert all(g <= 30 + 1e-9 for g in [b - a for a, b in zip(every, every[1:], strict=False)])
    assert len(worker.outbox.spool) == len(build.calls)  # server down: all kept


@pytest.mark.parametrize("seed", range(3))
def test_fleet_members_sweep_at_different_times(tmp_path: Path, seed: int) -> None:
    firsts = []
    for member in range(3):
        clock = FakeClock()
        build = RecordingBuilder(clock)
        directory = tmp_path / f"m{member}"
        worker = make_worker(directory, clock, build, seed=seed * 10 + member,
                             sweep_interval_s=600, sweep_jitter_s=120)
        worker.run(until=clock.now + 200)
        worker.outbox.close()
        firsts.append(build.times(ReportKind.SWEEP)[0] - 1_000.0)
    assert all(0 <= f <= 120 for f in firsts) and len(set(firsts)) == 3


def test_a_failing_step_never_stops_the_loop(tmp_path: Path) -> None:
    clock = FakeClock()
    build = RecordingBuilder(clock, fail_every=3)
    worker = make_worker(tmp_path, clock, build, inventory_interval_s=30, sweep_jitter_s=0)
    worker.run(until=clock.now + 30 * 12)
    assert len(build.calls) >= 12
    failures = sum(r.failures for n, r in worker.stats.steps.items() if n.startswith("build"))
    assert failures == len(build.calls) // 3
    assert len(worker.outbox.spool) == len(build.calls) - failures
    assert "NVML exploded" in (worker.stats.steps["build_inventory"].last_error or "")


def test_stop_during_a_wait_ends_the_loop_and_keeps_reports(tmp_path: Path) -> None:
    clock = FakeClock()
    build = RecordingBuilder(clock)
    worker = make_worker(tmp_path, clock, build)

    def sleep_then_stop(seconds: float) -> None:
        clock.sleep(seconds)
        if len(clock.sleeps) == 4:
            worker.stop()

    worker.sleep = sleep_then_stop
    worker.run(until=clock.now + 10_000)
    assert len(clock.sleeps) == 4  # woken for inventory, sweep and replays; then stopped
    assert len(worker.outbox.spool) == len(build.calls) >= 2


def test_report_in_flight_at_stop_goes_to_the_spool_without_a_send(tmp_path: Path) -> None:
    clock = FakeClock()
    worker = make_worker(tmp_path, clock, RecordingBuilder(clock))
    worker.stop()
    report, submitted = worker.run_pass(ReportKind.INVENTORY)
    assert submitted is not None and submitted.delivery == "spooled"
    assert submitted.answer is None and worker.outbox.stats.attempts == 0


def test_cost_carries_agent_usage_and_announces_drops_once(tmp_path: Path) -> None:
    clock = FakeClock()
    worker = make_worker(tmp_path, clock, RecordingBuilder(clock))
    readings = iter([(2.0, 50 << 20), (2.25, 51 << 20)])
    worker.meter = lambda: next(readings)
    worker._cpu_mark = 1.5
    worker.outbox.spool.set_aside_report(sample_report(), ".rejected")  # one lost report
    first, _ = worker.run_pass(ReportKind.INVENTORY)
    second, _ = worker.run_pass(ReportKind.INVENTORY)
    assert first and second
    assert first.cost.dropped_reports == 1 and second.cost.dropped_reports == 0
    assert (first.cost.agent_cpu_s, second.cost.agent_cpu_s) == (0.5, 0.25)  # since previous
    assert second.cost.agent_rss_bytes == 51 << 20


def test_process_usage_reads_this_process() -> None:
    sum(i * i for i in range(200_000))  # burn a little CPU
    cpu, rss = process_usage()
    assert cpu > 0 and rss > 10 << 20  # a Python process: tens of MiB
