"""Xid/SXid events on the agent side: real-format kernel lines parsed, NVML and kernel-log
sightings deduplicated, a simulated fault's events on the report, the kernel log without
permission one warning, and events spooled with their report while the server is away."""

from __future__ import annotations

import logging
import os
from datetime import timedelta
from pathlib import Path

import pytest

from peerwatch.probes.agent.events import EventCollector
from peerwatch.probes.agent.passes import report_builder
from peerwatch.probes.agent.spool import Spool
from peerwatch.probes.config import ProbeSettings
from peerwatch.probes.nvidia.kernel_log import KernelLog
from peerwatch.probes.nvidia.kmsg import parse_line, parse_record, pci_key
from peerwatch.probes.nvidia.nvml_events import NvmlXid
from peerwatch.probes.report import EventKind, EventSource, Report, ReportKind, utcnow
from peerwatch.probes.sim.faults import GpuLost, LinksDown, LinkXid, SwitchSxid
from peerwatch.probes.sim.simulated import SimulatedFabric
from tests.probes.fakeclock import FakeClock

XID_79 = ("NVRM: Xid (PCI:0000:91:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off "
          "the bus.")
XID_74 = ("NVRM: Xid (PCI:0000:b7:00): 74, pid='<unknown>', name=<unknown>, NVLink: fatal error "
          "detected on link 2(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)")
XID_149 = ("NVRM: Xid (PCI:0008:06:00): 149, NETIR_LINK_EVT  Non-fatal  XC0 i0 Link 14 "
           "(0x021425c6 0x0)")
SXID = ("nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 12028, Non-fatal, Link 32 egress non-posted "
        "PRIV error (First)")


def test_real_format_xid_and_sxid_lines_are_parsed() -> None:
    lost = parse_line(XID_79)
    assert lost is not None and (lost.kind, lost.code, lost.pci, lost.link) == (
        EventKind.XID, 79, "0000:91:00", None)
    link = parse_line(XID_74)
    assert link is not None and (link.code, link.link) == (74, 2)
    nvl5 = parse_line(XID_149)
    assert nvl5 is not None and (nvl5.code, nvl5.link, nvl5.fatal, nvl5.subcode) == (
        149, 14, False, (0x021425C6 >> 20) & 0x3F)
    sw = parse_line(SXID)
    assert sw is not None and (sw.kind, sw.code, sw.link, sw.fatal, sw.switch) == (
        EventKind.SXID, 12028, 32, False, "0000:06:00.0")
    assert parse_line("NVRM: Persistence mode is deprecated") is None


def test_a_kmsg_record_and_pci_forms() -> None:
    rec = parse_record(b"4,358,3642705,c;" + XID_79.encode() + b"\n")
    assert rec is not None and rec.sequence == 358 and rec.message == XID_79
    assert rec.since_boot == timedelta(seconds=3, microseconds=642705)
    assert parse_record(b" SUBSYSTEM=pci\n") is None
    assert pci_key("00000000:91:00.0") == pci_key("0000:91:00") == "0000:91:00"


def test_nvml_and_kernel_log_sightings_of_one_xid_are_one_event() -> None:
    at = utcnow()
    c = EventCollector(gpu_of_pci=lambda pci: {"0000:b7:00": 3}.get(pci_key(pci)))
    c.on_nvml(NvmlXid(gpu=3, code=74), at=at)
    line = parse_line(XID_74)
    c.on_line(line, at + timedelta(milliseconds=40), "kmsg")
    c.on_nvml(NvmlXid(gpu=5, code=74), at=at)  # another GPU: its own event
    events = c.take(at + timedelta(seconds=1))
    assert len(events) == 2
    both = next(e for e in events if e.gpu == 3)
    assert both.sources == [EventSource.KMSG, EventSource.NVML] and both.link == 2
    assert both.count == 1 and both.at == at
    # the same source again within the window is a repeat; a late twin of a sent one drops
    c.on_line(line, at + timedelta(milliseconds=60), "kmsg")
    assert c.take(at + timedelta(seconds=2))[0].count == 1
    c.on_nvml(NvmlXid(gpu=3, code=74), at=at + timedelta(seconds=2))  # kmsg's twin: sent
    assert c.take(at + timedelta(seconds=3)) == []
    c.on_nvml(NvmlXid(gpu=3, code=74), at=at + timedelta(seconds=20))
    c.on_nvml(NvmlXid(gpu=3, code=74), at=at + timedelta(seconds=21))
    (repeat,) = c.take(at + timedelta(seconds=22))
    assert repeat.count == 2 and repeat.sources == [EventSource.NVML]


def test_a_kernel_log_without_permission_is_one_warning(tmp_path: Path,
                                                         caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    reader = KernelLog(lambda *a: None, tmp_path / "no-such-kmsg").start()
    reader.close()
    assert reader.problem is not None and "no-such-kmsg" in reader.problem
    assert sum("kernel log:" in r.getMessage() for r in caplog.records) == 1


def test_kmsg_records_become_events(tmp_path: Path) -> None:
    """A pipe stands in for /dev/kmsg: one record per write, non-blocking reads."""
    got: list = []
    r, w = os.pipe()
    os.set_blocking(r, False)
    reader = KernelLog(lambda line, at, src: got.append((line.code, src)), Path("pipe"),
                       lookback=timedelta(days=365 * 100))
    os.write(w, b"6,1,1000,-;" + XID_79.encode() + b"\n")
    import threading
    t = threading.Thread(target=reader.read_kmsg, args=(r,))
    t.start()
    try:
        from tests.conftest import eventually
        eventually(lambda: got == [(79, "kmsg")])
    finally:
        reader.stop.set()
        t.join(10)
        os.close(w)
        os.close(r)
    assert reader.counts["nvrm"] == 1 and reader.counts["events"] == 1


def test_simulated_faults_put_their_events_on_the_report(tmp_path: Path) -> None:
    clock = FakeClock()
    fab = SimulatedFabric("hgx8", clock=clock)
    build = report_builder(fab, ProbeSettings(spool_dir=tmp_path), watchdog=False)
    fab.inject(LinksDown(gpu=3, links=(5,)), GpuLost(gpu=6), LinkXid(gpu=1, link=2, every_s=60),
               SwitchSxid(switch=0))
    clock.advance(130)
    report = build(ReportKind.INVENTORY)
    seen = sorted((e.kind.value, e.code, e.gpu, e.link, e.count) for e in report.events)
    assert seen == [("sxid", 12028, None, 32, 1), ("xid", 74, 1, 2, 3),
                    ("xid", 74, 3, 5, 1), ("xid", 79, 6, None, 1)]
    assert Report.model_validate_json(report.model_dump_json()) == report
    assert build(ReportKind.INVENTORY).events == []  # taken once


def test_events_are_spooled_with_their_report(tmp_path: Path) -> None:
    fab = SimulatedFabric("hgx8", clock=FakeClock())
    build = report_builder(fab, ProbeSettings(spool_dir=tmp_path), watchdog=False)
    fab.inject(GpuLost(gpu=2))
    report = build(ReportKind.INVENTORY)
    with Spool(tmp_path / "spool", 1 << 20) as spool:
        entry = spool.put(report)
        assert entry is not None
        back = spool.load(entry)
    assert back is not None and [(e.code, e.gpu) for e in back.events] == [(79, 2)]
