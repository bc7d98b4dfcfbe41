"""The agent's Xid/SXid events: gathered from every source, deduplicated, handed to reports.

Sources: NVML's critical-Xid events (`probes/nvidia/nvml_events.py`), the kernel log
(`probes/nvidia/kernel_log.py`: /dev/kmsg or the journal) and, on a simulated host, its
faults (`SimulatedFabric.drain_events`). Each event rides on the agent's next report (the
`events` field, schema 3), so it is spooled, retried and stored exactly like the report:
no second delivery path to keep right, and the inventory report every 30 s bounds the delay.

Dedup: NVML and the kernel log see one Xid twice, milliseconds apart. Two sightings of the
same (kind, number, GPU or PCI address, switch) within `WINDOW_S` are one event: a second
source adds itself to `sources` (and the kernel line's link and text), the same source again
is a repeat and adds to `count`. The keys of events already handed over are remembered for
the window too, so a late second sighting is not sent again in the next report.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from peerwatch.probes.report import MAX_EVENTS, EventKind, EventSource, FabricEvent, utcnow

log = logging.getLogger(__name__)

WINDOW_S = 5.0
Feed = Callable[[datetime], list[FabricEvent]]  # a source polled at report time (simulated)
Key = tuple[str, int, str, str]


def event_key(e: FabricEvent) -> Key:
    where = str(e.gpu) if e.gpu is not None else (e.pci_bus_id or "")
    return (e.kind.value, e.code, where, e.switch or "")


def merged(old: FabricEvent, new: FabricEvent) -> FabricEvent:
    """One event seen by two sources: the earlier time, every source, the richer details."""
    return old.model_copy(update={
        "at": min(old.at, new.at),
        "sources": sorted(set(old.sources) | set(new.sources)),
        "link": old.link if old.link is not None else new.link,
        "pci_bus_id": old.pci_bus_id or new.pci_bus_id,
        "subcode": old.subcode if old.subcode is not None else new.subcode,
        "fatal": old.fatal if old.fatal is not None else new.fatal,
        "message": old.message or new.message,
    })


class EventCollector:
    """Thread-safe buffer the sources add to and the report builder `take`s from."""

    def __init__(self, gpu_of_pci: Callable[[str], int | None] = lambda pci: None,
                 feeds: list[Feed] | None = None, window_s: float = WINDOW_S) -> None:
        self.gpu_of_pci = gpu_of_pci
        self.feeds = feeds or []
        self.window = timedelta(seconds=window_s)
        self.dropped = 0  # events beyond MAX_EVENTS before a report took them
        self._buffer: list[FabricEvent] = []
        self._sent: list[FabricEvent] = []  # handed over within the window: late twins drop
        self._lock = threading.Lock()
        self._closers: list[Callable[[], Any]] = []

    def add(self, event: FabricEvent) -> None:
        with self._lock:
            key = event_key(event)
            for i, old in enumerate(self._buffer):
                if event_key(old) == key and abs(old.at - event.at) <= self.window:
                    self._buffer[i] = self._combine(old, event)
                    return
            for old in self._sent:
                if (event_key(old) == key and abs(old.at - event.at) <= self.window
                        and not set(event.sources) <= set(old.sources)):
                    return  # the other source's sighting of an event already sent
            if len(self._buffer) >= MAX_EVENTS:
                self.dropped += 1
                return
            self._buffer.append(event)

    @staticmethod
    def _combine(old: FabricEvent, new: FabricEvent) -> FabricEvent:
        if set(new.sources) <= set(old.sources):
            return old.model_copy(update={"count": old.count + new.count})
        return merged(old, new)

    def on_nvml(self, xid: Any, at: datetime | None = None) -> None:
        """An `NvmlXid` from the NVML waiting thread."""
        self.add(FabricEvent(kind=EventKind.XID, code=xid.code, at=at or utcnow(),
                             sources=[EventSource.NVML], gpu=xid.gpu))

    def on_line(self, line: Any, at: datetime, source: str) -> None:
        """A parsed kernel-log line (`probes.nvidia.kmsg.LogLine`)."""
        gpu = self.gpu_of_pci(line.pci) if line.kind is EventKind.XID else None
        self.add(FabricEvent(kind=line.kind, code=line.code, at=at,
                             sources=[EventSource(source)], gpu=gpu,
                             pci_bus_id=line.pci[:32], link=line.link,
                             switch=line.switch[:32] if line.switch else None,
                             subcode=line.subcode, fatal=line.fatal, message=line.message))

    def take(self, at: datetime) -> list[FabricEvent]:
        """Every event gathered since the last call (polled feeds stamped `at`), oldest first."""
        for feed in self.feeds:
            try:
                for event in feed(at):
                    self.add(event)
            except Exception:  # noqa: BLE001 - a feed never stops a report
                log.exception("reading events failed; the report goes without them")
        with self._lock:
            out, self._buffer = sorted(self._buffer, key=lambda e: e.at), []
            horizon = at - 2 * self.window
            self._sent = [e for e in self._sent if e.at >= horizon] + out
        return out

    def on_close(self, fn: Callable[[], Any]) -> None:
        self._closers.append(fn)

    def close(self) -> None:
        for fn in reversed(self._closers):
            try:
                fn()
            except Exception:  # noqa: BLE001
                log.exception("closing an event source failed")
        self._closers = []


def with_events(report: Any, collector: EventCollector | None) -> Any:
    """`report` carrying the events gathered since the previous one."""
    if collector is None:
        return report
    events = collector.take(report.started_at)
    return report.model_copy(update={"events": events}) if events else report
