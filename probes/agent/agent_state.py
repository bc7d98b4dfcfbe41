"""What the agent's own `/metrics` shows: the newest state of this host, kept in memory.

The worker records every report it builds here; the metrics collector (`probes/agent/metrics.py`)
reads a consistent `AgentView` at scrape time from another thread. Per-pair results are
merged across sweeps (a pair a sweep skipped keeps its newest measured value rather than
vanishing from Prometheus), and the NVLink ports a GPU has had are remembered for the life
of the process, so a port that drops out of NVML's inventory still reads as missing.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from peerwatch.probes.report import (
    GPU_TESTS,
    JOINT_TESTS,
    NIC_TESTS,
    CounterSample,
    LinkCounters,
    Report,
    ReportKind,
    TransferResult,
)

log = logging.getLogger(__name__)

PairTest = tuple[int, int, str]  # (src, dst, test)


@dataclass(frozen=True)
class AgentView:
    """One consistent picture for one scrape (nothing in it changes afterwards)."""

    latest: Report | None = None  # newest report of any kind: inventory, links, counters
    sweep: Report | None = None  # newest sweep: its cost, skipped GPUs, failed tests
    results: dict[PairTest, TransferResult] = field(default_factory=dict)
    ports_had: dict[int, frozenset[int]] = field(default_factory=dict)
    dropped_reports: int = 0  # lost reports announced to the server since the agent started


def newest_counters(samples: list[CounterSample]) -> dict[tuple[int, int], LinkCounters]:
    """The last reading of each (gpu, link) among a report's counter samples."""
    found: dict[tuple[int, int], LinkCounters] = {}
    for sample in sorted(samples, key=lambda s: s.at):
        for c in sample.links:
            found[(c.gpu, c.link)] = c
    return found


def newest_pcie_replays(samples: list[CounterSample]) -> dict[int, int]:
    found: dict[int, int] = {}
    for sample in sorted(samples, key=lambda s: s.at):
        found.update(sample.pcie_replay)
    return found


class AgentState:
    """Written by the worker thread, read by the metrics thread; a lock keeps views whole.

    Listeners (`subscribe`) are told of each new view on the worker's thread, after the
    lock is released; one that raises is logged and never disturbs the probe loop.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._view = AgentView()
        self._listeners: list[Callable[[AgentView], object]] = []

    def subscribe(self, listener: Callable[[AgentView], object]) -> None:
        self._listeners.append(listener)

    def _changed(self) -> None:
        view = self.view()
        for listener in self._listeners:
            try:
                listener(view)
            except Exception:  # noqa: BLE001 - the probe loop must outlive any listener
                log.exception("agent state listener %r failed", listener)

    def record(self, report: Report) -> None:
        with self._lock:
            old = self._view
            ports = {g: set(links) for g, links in old.ports_had.items()}
            for p in report.inventory.nvlinks:
                ports.setdefault(p.gpu, set()).add(p.link)
            results = old.results
            sweep = old.sweep
            if report.kind is ReportKind.SWEEP:
                sweep = report
                results = {**results, **_pair_results(report)}
            self._view = AgentView(
                latest=report, sweep=sweep, results=results,
                ports_had={g: frozenset(links) for g, links in ports.items()},
                dropped_reports=old.dropped_reports)
        self._changed()

    def announced_drops(self, n: int) -> None:
        """`n` lost reports were announced in a report now delivered or spooled."""
        if n > 0:
            with self._lock:
                v = self._view
                self._view = AgentView(v.latest, v.sweep, v.results, v.ports_had,
                                       v.dropped_reports + n)

    def view(self) -> AgentView:
        with self._lock:
            return self._view


def _pair_results(report: Report) -> dict[PairTest, TransferResult]:
    """This sweep's pair results, a per-GPU test's (h2d, d2h, local, the opt-in
    gdr_loopback) as (gpu, gpu, test); a failed test removes nothing (it has no new value)."""
    found: dict[PairTest, TransferResult] = {}
    for r in report.results:
        own = r.test in GPU_TESTS or r.test in JOINT_TESTS or r.test in NIC_TESTS  # its own
        if r.src is None or r.value is None or (r.dst is None and not own):
            continue
        found[(r.src, r.src if r.dst is None else r.dst, r.test.value)] = r
    return found

