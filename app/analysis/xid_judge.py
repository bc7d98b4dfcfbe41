"""Judge a host's recent Xid/SXid events with the catalog: pure, over plain values.

Events of one object (a GPU, an NVLink, an NVSwitch) and one number are judged together:
`fault` when the catalog calls one event critical (held for `HOLD_S` after the last one)
or when `threshold` of them fall within the entry's window; `warning` for a warning-level
event inside its window; `info` otherwise. Only a fault changes a verdict
(`app/judging/events.py`); a warning is an alert with the verdict unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from peerwatch.app.analysis.text import fmt_duration
from peerwatch.app.analysis.xid_catalog import CatalogEntry, lookup

HOLD_S = 3600.0  # a critical event keeps its object faulty this long after the last one
LOOKBACK_S = 6 * 3600.0  # events older than this are history only: never judged
Level = Literal["info", "warning", "fault"]


@dataclass(frozen=True)
class EventFact:
    kind: str
    code: int
    at: datetime
    gpu: int | None = None
    link: int | None = None
    switch: str | None = None
    subcode: int | None = None
    fatal: bool | None = None
    count: int = 1


@dataclass(frozen=True)
class EventFinding:
    entry: CatalogEntry
    level: Level
    count: int  # events within the window (the catalog's), or since the hold began
    first_at: datetime
    last_at: datetime
    gpu: int | None = None
    link: int | None = None
    switch: str | None = None

    @property
    def where(self) -> str:
        if self.entry.object == "switch":
            return f"NVSwitch {self.switch}"
        if self.entry.object == "link" and self.link is not None:
            return f"GPU{self.gpu} NVLink {self.link}"
        return f"GPU{self.gpu}"

    def reason(self) -> str:
        e = self.entry
        times = f"{self.count}x" if self.count > 1 else "once"
        how = (f"{times} in {fmt_duration(e.window_s)}, threshold {e.threshold}"
               if e.threshold and e.severity != "critical" else times)
        return (f"{e.label} on {self.where} ({how}): {e.name}; action: {e.action} "
                f"[{e.version}: {e.source}]")


def _object_key(f: EventFact, entry: CatalogEntry) -> tuple:
    if entry.object == "switch":
        return ("switch", f.switch, None)
    if entry.object == "link" and f.link is not None:
        return ("link", f.gpu, f.link)
    return ("gpu", f.gpu, None)


def judge_events(facts: list[EventFact], now: datetime) -> list[EventFinding]:
    """One finding per (object, event number) with an event inside its window or hold."""
    groups: dict[tuple, list[tuple[EventFact, CatalogEntry]]] = {}
    for f in facts:
        if (now - f.at).total_seconds() > LOOKBACK_S:
            continue
        entry = lookup(f.kind, f.code, f.fatal, f.subcode)
        groups.setdefault((*_object_key(f, entry), f.kind, f.code), []).append((f, entry))
    out = [_judge_group(items, now) for items in groups.values()]
    return [f for f in out if f is not None]


def _judge_group(items: list[tuple[EventFact, CatalogEntry]],
                 now: datetime) -> EventFinding | None:
    items.sort(key=lambda fe: fe[0].at)
    worst = max((e for _, e in items), key=lambda e: ("info", "warning", "critical").index(
        e.severity))
    last = items[-1][0]
    if worst.severity == "critical" and (now - last.at).total_seconds() <= HOLD_S:
        return _finding(items, worst, "fault")
    window = [(f, e) for f, e in items if now - f.at <= timedelta(seconds=worst.window_s)]
    if not window:
        return None
    count = sum(f.count for f, _ in window)
    if worst.threshold is not None and count >= worst.threshold:
        return _finding(window, worst, "fault")
    return _finding(window, worst, "warning" if worst.severity != "info" else "info")


def _finding(items: list[tuple[EventFact, CatalogEntry]], entry: CatalogEntry,
             level: Level) -> EventFinding:
    first, last = items[0][0], items[-1][0]
    return EventFinding(entry, level, sum(f.count for f, _ in items), first.at, last.at,
                        gpu=first.gpu, link=first.link, switch=first.switch)
