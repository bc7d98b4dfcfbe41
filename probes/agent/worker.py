"""The probe loop: inventory every 30 s, a transfer sweep every ~10 min, nothing ever lost.

Shaped after node_exporter's `collector.execute()`: each step (build a report, stamp its
cost, deliver it, replay the spool) is timed and isolated, so one failing step is logged
and counted while the others — and the next pass — go on. Time comes from an injectable
clock and waiting from an injectable sleep, so tests drive hours of schedule in
milliseconds; `stop()` (SIGTERM/SIGINT in the CLI) wakes the loop at once, and a report in
flight at that moment is spooled rather than dropped.

Sweeps wait `interval + U(0, jitter)` after the previous one, and the first waits
`U(0, jitter)`, so a fleet restarted together does not probe in lockstep.
"""

from __future__ import annotations

import logging
import random
import resource
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from peerwatch.probes.agent.agent_state import AgentState
from peerwatch.probes.agent.changes import ChangeTracker
from peerwatch.probes.agent.outbox import Delivery, Outbox, Submitted
from peerwatch.probes.agent.sender import Outcome
from peerwatch.probes.config import ProbeSettings
from peerwatch.probes.heartbeat import RESYNC_STATUS
from peerwatch.probes.report import Report, ReportKind

log = logging.getLogger(__name__)

T = TypeVar("T")
Clock = Callable[[], float]
Sleep = Callable[[float], Any]
BuildReport = Callable[[ReportKind], Report]
Meter = Callable[[], tuple[float, int]]  # (cumulative CPU seconds, resident bytes)
MIN_WAIT_S = 0.05  # never spin: the shortest wait between loop turns


def _peak_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB


def process_usage() -> tuple[float, int]:
    """This process's CPU seconds (user + system) so far and its peak resident memory.

    Peak, not current: the memory an operator must allow the agent is its high-water mark.
    """
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime, _peak_rss()


def thread_usage() -> tuple[float, int]:
    """The calling thread's CPU seconds (for many workers in one process, as in the demo)."""
    return time.thread_time(), _peak_rss()


def summarize(report: Report, submitted: Submitted | None) -> str:
    """One log line per pass: what it measured, what it cost, where the report went."""
    cost = report.cost
    failed = sum(1 for r in report.results if r.error)
    where = submitted.delivery if submitted else "not delivered (see the error above)"
    return (f"{report.kind} report: {len(report.results)} results ({failed} failed), "
            f"{len(cost.skipped)} GPUs skipped, GPU time {cost.gpu_time_s:.3f} s, "
            f"device memory {cost.device_memory_bytes_max / 2**20:.0f} MiB, "
            f"agent CPU {cost.agent_cpu_s:.2f} s, RSS {cost.agent_rss_bytes / 2**20:.0f} MiB; "
            f"{where}")


@dataclass
class StepRecord:
    seconds: float = 0.0
    runs: int = 0
    failures: int = 0
    last_error: str | None = None


@dataclass
class WorkerStats:
    passes: dict[str, int] = field(default_factory=dict)
    deliveries: dict[str, int] = field(default_factory=dict)
    steps: dict[str, StepRecord] = field(default_factory=dict)


class Worker:
    """Runs passes on schedule and hands their reports to an `Outbox`."""

    def __init__(self, build: BuildReport, outbox: Outbox, settings: ProbeSettings, *,
                 clock: Clock = time.monotonic, sleep: Sleep | None = None,
                 rng: random.Random | None = None, meter: Meter = process_usage) -> None:
        self.build = build
        self.outbox = outbox
        self.settings = settings
        self.clock = clock
        self.stop_event = outbox.stop
        self.sleep: Sleep = sleep or self.stop_event.wait
        self.rng = rng or random.Random()
        self.meter = meter
        self.stats = WorkerStats()
        self.state = AgentState()  # what the agent's /metrics shows (probes/agent/metrics.py)
        self.changes = ChangeTracker()  # full report or heartbeat (probes/agent/changes.py)
        self._cpu_mark = meter()[0]
        self.next_inventory_at = 0.0
        self.next_sweep_at = 0.0

    # ------------------------------------------------------------------ control

    def stop(self) -> None:
        """Ask the loop to end after the current step (safe from signal handlers)."""
        self.stop_event.set()

    @property
    def stopping(self) -> bool:
        return self.stop_event.is_set()

    def sweep_delay(self) -> float:
        return self.settings.sweep_interval_s + self.rng.uniform(0, self.settings.sweep_jitter_s)

    # ------------------------------------------------------------------ steps

    def _step(self, name: str, fn: Callable[[], T]) -> T | None:
        """Run one step, timed; an exception is logged and counted, never propagated."""
        record = self.stats.steps.setdefault(name, StepRecord())
        started = time.perf_counter()
        try:
            return fn()
        except Exception as exc:  # noqa: BLE001 - the loop must outlive any one step
            record.failures += 1
            record.last_error = f"{type(exc).__name__}: {exc}"
            log.exception("step %s failed; the loop goes on", name)
            return None
        finally:
            record.runs += 1
            record.seconds = time.perf_counter() - started
            log.debug("step %s took %.3f s", name, record.seconds)

    def _stamp(self, report: Report) -> Report:
        """Add what the agent itself cost since the previous report, and the lost reports."""
        cpu, rss = self.meter()
        cost = report.cost.model_copy(update={
            "agent_cpu_s": max(0.0, cpu - self._cpu_mark),
            "agent_rss_bytes": rss,
            "dropped_reports": self.outbox.spool.dropped(),
        })
        self._cpu_mark = cpu
        return report.model_copy(update={"cost": cost})

    def _deliver(self, report: Report) -> Submitted:
        announced = report.cost.dropped_reports
        if self.stopping:  # shutting down: do not wait on the network, keep it on disk
            submitted = Submitted(self.outbox.keep(report))
        else:
            try:
                submitted = self.outbox.submit(report)
            except Exception:  # noqa: BLE001 - whatever broke, the report must not be lost
                log.exception("delivering report %s failed; keeping it", report.report_id)
                submitted = Submitted(self.outbox.keep(report))
        if submitted.delivery in (Delivery.DELIVERED, Delivery.SPOOLED):
            self.outbox.spool.acknowledge_drops(announced)
            self.state.announced_drops(announced)
        self.stats.deliveries[submitted.delivery] = (
            self.stats.deliveries.get(submitted.delivery, 0) + 1)
        return submitted

    def run_pass(self, kind: ReportKind) -> tuple[Report | None, Submitted | None]:
        """One inventory or sweep pass: build, stamp, deliver. Each step isolated."""
        self.stats.passes[kind] = self.stats.passes.get(kind, 0) + 1
        built = self._step(f"build_{kind}", lambda: self.build(kind))
        if built is None:
            return None, None
        if self.outbox.ready() and len(self.outbox.spool) and not self.stopping:
            self._step("replay", self.outbox.replay)  # drops it finds go in this report
        if kind is ReportKind.INVENTORY:
            beat = self._step("heartbeat", lambda: self._heartbeat(built))
            if beat is not None:  # nothing changed: a heartbeat went instead (or nothing)
                self.state.record(built)
                self.stats.deliveries[beat.delivery] = (
                    self.stats.deliveries.get(beat.delivery, 0) + 1)
                return built, beat
        report = self._step("stamp_cost", lambda: self._stamp(built)) or built
        self.state.record(report)
        submitted = self._step("deliver", lambda: self._deliver(report))
        if submitted is not None and submitted.delivery is Delivery.DELIVERED:
            self.changes.acknowledged(report, self.clock())
        else:
            self.changes.not_acknowledged()
        log.log(logging.INFO if kind is ReportKind.SWEEP else logging.DEBUG, "%s",
                summarize(report, submitted))
        return report, submitted

    def _heartbeat(self, built: Report) -> Submitted | None:
        """A heartbeat instead of `built` when nothing the server judges changed
        (`changes.py`); None: send `built` in full (changed, the server asked for it, or it
        cannot take heartbeats)."""
        heartbeat = self.changes.heartbeat_for(built, self.clock(), built.finished_at)
        if heartbeat is None or self.stopping:
            return None
        answer = self.outbox.beat(heartbeat)
        if answer is None:  # backing off from an absent server: nothing to keep
            return Submitted(Delivery.SKIPPED)
        if answer.outcome is Outcome.DELIVERED:
            self.changes.heartbeats += 1
            return Submitted(Delivery.HEARTBEAT, answer)
        if answer.status == RESYNC_STATUS:
            log.info("server holds no state of this host (%s); sending a full report",
                     answer.describe())
            self.changes.resync()
            return None
        if answer.status in (404, 405) or answer.outcome is Outcome.REJECTED:
            log.warning("server refused a heartbeat (%s): an older server? Full reports for "
                        "the next hour", answer.describe())
            self.changes.unsupported(self.clock())
            return None
        if answer.outcome is Outcome.RETRY:
            return Submitted(Delivery.SKIPPED, answer)  # server away: said nothing new
        return None  # a credential refused: the full report's path says so loudly

    # ------------------------------------------------------------------ loop

    def run(self, until: float | None = None) -> WorkerStats:
        """Loop until `stop()` (or, for tests, until the clock reaches `until`)."""
        start = self.clock()
        self.next_inventory_at = start
        self.next_sweep_at = start + self.rng.uniform(0, self.settings.sweep_jitter_s)
        log.info("probe loop started: inventory every %.0f s, sweep every %.0f s (+0..%.0f s)",
                 self.settings.inventory_interval_s, self.settings.sweep_interval_s,
                 self.settings.sweep_jitter_s)
        while not self.stopping:
            now = self.clock()
            if until is not None and now >= until:
                break
            self._turn(now)
            wake = self._next_wake(until)
            if not self.stopping:
                self.sleep(max(MIN_WAIT_S, wake - self.clock()))
        log.info("probe loop stopped; %d report(s) wait in the spool", len(self.outbox.spool))
        return self.stats

    def _turn(self, now: float) -> None:
        if now >= self.next_sweep_at:
            self.run_pass(ReportKind.SWEEP)  # a sweep report carries the inventory too
            self.next_sweep_at = now + self.sweep_delay()
            self.next_inventory_at = self.clock() + self.settings.inventory_interval_s
        elif now >= self.next_inventory_at:
            self.run_pass(ReportKind.INVENTORY)
            self.next_inventory_at += self.settings.inventory_interval_s
            if self.next_inventory_at < self.clock():  # fell behind: skip, never burst
                self.next_inventory_at = self.clock() + self.settings.inventory_interval_s
        due = self.outbox.replay_due_at()
        if due is not None and self.clock() >= due and not self.stopping:
            self._step("replay", self.outbox.replay)

    def _next_wake(self, until: float | None) -> float:
        times = [self.next_inventory_at, self.next_sweep_at]
        due = self.outbox.replay_due_at()
        if due is not None:
            times.append(due)
        if until is not None:
            times.append(until)
        return min(times)
