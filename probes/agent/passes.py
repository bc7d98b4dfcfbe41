"""Turn probe settings into the function the worker calls to build each report.

The sweep engine (`probes.sweep.build_report`) does the measuring; this only maps the
probe's settings onto its options (watchdog, idleness threshold, force), applies a
host-name override and adds which job holds each GPU (`probes.agent.job_mapping`), the
GPUs seen since boot and the count the host should have (`probes.agent.gpus_seen`), so the
worker stays ignorant of how a report is made.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import datetime

from peerwatch.probes.agent.events import EventCollector, with_events
from peerwatch.probes.agent.gpus_seen import SeenSinceBoot, with_expected, with_seen
from peerwatch.probes.agent.job_mapping import with_jobs
from peerwatch.probes.config import ProbeSettings
from peerwatch.probes.fabric import Fabric
from peerwatch.probes.report import Report, ReportKind, default_tests, utcnow
from peerwatch.probes.sweep import SweepOptions, build_report


def sweep_options(settings: ProbeSettings, watchdog: bool = True) -> SweepOptions:
    """`watchdog=False` runs tests on the calling thread: only for fabrics that cannot hang
    (the demo's simulated hosts), where a thread per test would be pure overhead."""
    return SweepOptions(tests=default_tests(settings.nvls, tuple(settings.opt_in_tests)),
                        timeout_s=settings.watchdog_timeout_s if watchdog else None,
                        busy_utilization_pct=settings.idle_max_utilization_pct,
                        force=settings.force)


def with_hostname(report: Report, hostname: str | None) -> Report:
    if not hostname or report.host.hostname == hostname:
        return report
    host = report.host.model_copy(update={"hostname": hostname})
    return report.model_copy(update={"host": host})


def report_builder(fabric: Fabric, settings: ProbeSettings,
                   now: Callable[[], datetime] = utcnow,
                   watchdog: bool = True,
                   events: EventCollector | None = None,
                   seen: SeenSinceBoot | None = None) -> Callable[[ReportKind], Report]:
    """`build(kind)`: one inventory or sweep pass over `fabric`, as a `Report` carrying the
    events gathered since the previous one (`events`; a simulated fabric's own when None)
    and, with `seen`, the GPUs NVML listed since the host booted."""
    options = sweep_options(settings, watchdog)
    if settings.nvls:  # before NCCL first reads it: NCCL reads its settings once a process
        os.environ["NCCL_NVLS_ENABLE"] = "1"
    drain = getattr(fabric, "drain_events", None)
    if events is None and drain is not None:
        events = EventCollector(feeds=[drain])

    def build(kind: ReportKind) -> Report:
        report = build_report(fabric, kind, options, now=now)
        report = with_hostname(with_events(report, events), settings.hostname)
        report = with_expected(with_seen(report, seen), settings.expected_gpus)
        return with_jobs(report, settings.job_mapping_dir, settings.kubelet_socket)

    return build
