"""NVML events and the kernel log on a real GPU host (skipped where there is no GPU): every
GPU registers for critical Xids, a wait with nothing to report times out cleanly, and the
agent's collector running on the real sources neither fails nor invents events."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from peerwatch.probes.agent.event_sources import open_events
from peerwatch.probes.nvidia.nvml import Nvml
from peerwatch.probes.nvidia.nvml_events import NvmlEvents
from peerwatch.probes.report import utcnow


def test_every_gpu_registers_and_the_wait_times_out_cleanly(nvml: Nvml) -> None:
    events = NvmlEvents(nvml, lambda xid: None, wait_ms=500)
    try:
        assert events.registered == list(range(nvml.gpu_count())), events.problems
        started = time.monotonic()
        got = events.wait_once()
        assert got is None or got.code > 0  # a real Xid during the test is reported, not raised
        assert got is not None or events.timeouts == 1
        assert time.monotonic() - started < 30
    finally:
        events.close()


def test_the_collector_runs_on_the_real_sources(nvml: Nvml) -> None:
    from peerwatch.probes.nvidia.real import RealFabric
    if not os.access("/dev/kmsg", os.R_OK):
        pytest.skip("/dev/kmsg is not readable here")
    fabric = RealFabric(quick=True)
    collector = open_events(fabric, True, Path("/dev/kmsg"))
    try:
        time.sleep(2.5)  # two NVML waits time out meanwhile; the kernel log is read
        events = collector.take(utcnow())
        assert all(e.at <= utcnow() for e in events)
    finally:
        collector.close()
        fabric.close()
