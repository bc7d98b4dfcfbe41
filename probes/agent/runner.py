"""Assemble a running probe from settings: fabric, report builder, spool, sender, worker.

One place wires the parts, so `peerwatch probe`, the in-process probe of `peerwatch serve`
and every simulated host of `peerwatch demo` run the very same code; each can hand in its
own fabric, clock, sleep and resource meter.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from peerwatch.probes.agent.event_sources import open_events
from peerwatch.probes.agent.gpus_seen import FILE_NAME, SeenSinceBoot
from peerwatch.probes.agent.metrics_server import AgentExposition, MetricsServer
from peerwatch.probes.agent.outbox import Outbox
from peerwatch.probes.agent.passes import report_builder
from peerwatch.probes.agent.sender import Backoff, Sender
from peerwatch.probes.agent.spool import AnySpool, Spool, open_spool
from peerwatch.probes.agent.worker import Clock, Meter, Sleep, Worker, process_usage
from peerwatch.probes.config import ProbeSettings
from peerwatch.probes.fabric import Fabric
from peerwatch.probes.fabric_select import open_real_or_refuse
from peerwatch.probes.report import utcnow


@dataclass
class ProbeRuntime:
    settings: ProbeSettings
    fabric: Fabric
    outbox: Outbox
    worker: Worker
    metrics: MetricsServer | None = None  # the agent's /metrics, with --metrics-port


def open_fabric_for(settings: ProbeSettings) -> Fabric:
    """The fabric the settings name: for a probe `auto` means the real GPUs or an error
    (`open_real_or_refuse`), never a simulated host."""
    return open_real_or_refuse(settings.fabric, hostname=settings.hostname)


def seen_file(spool: AnySpool) -> Path | None:
    """The seen-since-boot file beside the spooled reports (the spool's lock makes it this
    agent's alone); None without a usable spool directory: the set stays in memory."""
    return spool.directory / FILE_NAME if isinstance(spool, Spool) else None


@contextmanager
def open_runtime(settings: ProbeSettings, *, fabric: Fabric | None = None,
                 clock: Clock = time.monotonic, sleep: Sleep | None = None,
                 meter: Meter = process_usage, rng: random.Random | None = None,
                 stop: threading.Event | None = None,
                 watchdog: bool = True,
                 wall: Callable[[], datetime] = utcnow) -> Iterator[ProbeRuntime]:
    """A ready worker; everything it opened is closed on exit (spool lock, HTTP, fabric).
    `wall`: the clock reports are stamped with (a host's own, which may be off)."""
    with ExitStack() as stack:
        if fabric is None:
            fabric = open_fabric_for(settings)
            stack.callback(fabric.close)
        spool = open_spool(settings.spool_dir, settings.spool_max_bytes)
        stack.callback(spool.close)
        sender = Sender(settings.server_url, settings.token, settings.request_timeout_s,
                        wall=wall)
        stack.callback(sender.close)
        rng = rng or random.Random()
        backoff = Backoff(settings.backoff_initial_s, settings.backoff_max_s,
                          random.Random(rng.random()))
        outbox = Outbox(sender, spool, backoff, clock, stop)
        events = open_events(fabric, settings.events, settings.kmsg_path)
        stack.callback(events.close)
        seen = SeenSinceBoot(seen_file(spool))
        build = report_builder(fabric, settings, now=wall, watchdog=watchdog, events=events,
                               seen=seen)
        worker = Worker(build, outbox, settings, clock=clock, sleep=sleep, rng=rng, meter=meter)
        metrics = None
        if settings.metrics_port is not None:
            expose = AgentExposition(worker.state, spool, settings.metrics_tests)
            metrics = MetricsServer(expose, settings.metrics_port, settings.metrics_addr)
            stack.callback(metrics.close)
        yield ProbeRuntime(settings, fabric, outbox, worker, metrics)
