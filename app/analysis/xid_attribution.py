"""A bad pair explained by an Xid one of its GPUs logged while the pair was bad.

Pattern attribution (`attribution.py`) needs a GPU bad with every peer, at least two: a
2-GPU board cannot tell a pair fault from a GPU fault, nor can a GPU with one bad peer so
far. The driver often can: when a pair's copies fail or run slow and one end logged an Xid
of a class that bears on peer copies (the catalog's `p2p`: fallen off the bus, ECC, NVLink
errors, GSP) in the window of the bad measurements, that GPU explains the pair ("explained
by GPU3: Xid 79 at 02:10 UTC"); its Xid alert is the page, the healthy end stays offered.

Not explained, and said in the pair's reason: both ends logged such Xids (no end to blame),
or the only Xids in the window say nothing about P2P (an application's Xid 13). The pair
stays a pair fault. Pure: judged pairs, judged event findings and times in.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from peerwatch.app.analysis.attribution import BAD, PatternFault
from peerwatch.app.analysis.health import PairJudgement
from peerwatch.app.analysis.xid_judge import EventFinding

LEAD_S = 600.0  # an Xid up to a sweep interval before the first bad measurement explains it
Pair = tuple[int, int]


@dataclass(frozen=True)
class EventAttribution:
    """The pairs with the Xid explanations, and each explaining GPU's fault in words."""

    pairs: tuple[PairJudgement, ...]
    gpus: Mapping[int, PatternFault]  # GPU -> "copies fail with GPU5 after Xid 74 at ..."
    explained: frozenset[Pair]  # the pairs explained by an Xid (their bad_from is kept)


def gpu_findings(findings: Iterable[EventFinding]) -> dict[int, list[EventFinding]]:
    """GPU -> its judged Xid findings: a GPU's own, or one of its NVLinks'. NVSwitch
    findings name no GPU. A P2P class is never `info` (each raises an alert: the page of a
    pair it explains); an `info` one (an application's Xid 13) is named as saying nothing."""
    out: dict[int, list[EventFinding]] = {}
    for f in findings:
        if f.entry.object != "switch" and f.gpu is not None:
            out.setdefault(f.gpu, []).append(f)
    return out


def _window(p: PairJudgement, start: datetime | None) -> tuple[datetime, datetime] | None:
    """[first bad measurement - LEAD_S, newest measurement + LEAD_S]."""
    times = [t.latest.at for t in p.tests if t.latest is not None]
    newest = max(times, default=None)
    first = start or min((t.low_since for t in p.tests if t.low_since), default=newest)
    if newest is None or first is None:
        return None
    lead = timedelta(seconds=LEAD_S)
    return first - lead, max(newest, first) + lead


def _in_window(found: Sequence[EventFinding], window: tuple[datetime, datetime]
               ) -> list[EventFinding]:
    lo, hi = window
    return sorted((f for f in found if f.last_at >= lo and f.first_at <= hi),
                  key=lambda f: f.first_at)


def _short(f: EventFinding) -> str:
    return f"{f.entry.label} at {f.first_at:%H:%M} UTC ({f.entry.name})"


def _names(gpu: int, found: Sequence[EventFinding]) -> str:
    return f"GPU{gpu} {', '.join(dict.fromkeys(f.entry.label for f in found))}"


def _judge_one(p: PairJudgement, by_gpu: Mapping[int, list[EventFinding]],
               start: datetime | None) -> tuple[PairJudgement, EventFinding | None]:
    """The pair explained by one end's P2P-class Xid, or with a note saying why not."""
    window = _window(p, start)
    if window is None:
        return p, None
    ends = {g: _in_window(by_gpu.get(g, []), window) for g in (p.src, p.dst)}
    p2p = {g: [f for f in fs if f.entry.p2p] for g, fs in ends.items()}
    blamed = [g for g in (p.src, p.dst) if p2p[g]]
    if len(blamed) == 2:
        both = f"{_names(p.src, p2p[p.src])}; {_names(p.dst, p2p[p.dst])}"
        return replace(p, reason=f"{p.reason}; not blamed on either GPU: both logged Xids "
                                 f"then ({both}), a pair fault"), None
    if blamed:
        gpu, first = blamed[0], p2p[blamed[0]][0]
        cause = f"GPU{gpu}: {_short(first)}"
        return replace(p, explained_by=gpu, cause=cause, by_event=True,
                       reason=f"GPU{p.src}->GPU{p.dst} explained by {cause}: {p.reason}"), first
    quiet = [(g, fs) for g, fs in ends.items() if fs]
    if quiet:
        words = "; ".join(f"GPU{g}'s {', '.join(_short(f) for f in fs)}" for g, fs in quiet)
        return replace(p, reason=f"{p.reason}; {words} says nothing about P2P: a pair "
                                 "fault"), None
    return p, None


def _failing(p: PairJudgement) -> bool:
    return p.verdict.value == "down" or any(
        t.latest is not None and t.latest.error is not None for t in p.tests)


def _gpu_faults(explained: Sequence[tuple[PairJudgement, EventFinding]]
                ) -> dict[int, PatternFault]:
    """GPU -> "copies fail with GPU5 after Xid 74 at 02:10 UTC (NVLink error)"."""
    by_gpu: dict[int, list[tuple[PairJudgement, EventFinding]]] = {}
    for p, f in explained:
        assert p.explained_by is not None
        by_gpu.setdefault(p.explained_by, []).append((p, f))
    out = {}
    for gpu, items in sorted(by_gpu.items()):
        peers = sorted({p.dst if p.src == gpu else p.src for p, _ in items})
        failing = any(_failing(p) for p, _ in items)
        first = min((f for _, f in items), key=lambda f: f.first_at)
        out[gpu] = PatternFault(failing, f"copies {'fail' if failing else 'run slow'} with "
                                         f"{', '.join(f'GPU{g}' for g in peers)} after "
                                         f"{_short(first)}")
    return out


def explain_by_events(pairs: Sequence[PairJudgement], findings: Iterable[EventFinding],
                      starts: Mapping[Pair, datetime]) -> EventAttribution:
    """Each bad pair explained by no GPU and with no cause of its own (P2P lost stays
    P2PAccessLost's), judged against its GPUs' Xids; `starts`: when each pair's trouble
    began, as stored (`pattern_wait.bad_from`), so a window does not move with the newest
    failure."""
    by_gpu = gpu_findings(findings)
    out, explained = [], []
    for p in pairs:
        if p.verdict not in BAD or p.explained_by is not None or p.cause is not None \
                or not (by_gpu.keys() & {p.src, p.dst}):
            out.append(p)
            continue
        judged, finding = _judge_one(p, by_gpu, starts.get((p.src, p.dst)))
        out.append(judged)
        if finding is not None:
            explained.append((judged, finding))
    return EventAttribution(tuple(out), _gpu_faults(explained),
                            frozenset((p.src, p.dst) for p, _ in explained))
