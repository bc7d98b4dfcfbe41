"""Judging cross-host (`host_pair`) results, and triangulating what is slow between hosts.

A host pair is judged like a pair inside a host: its newest figure against what the network
map says it should reach (the slower NIC's line rate x `NET_EFFICIENCY`), against its own
baseline (the median of its earlier healthy figures) and against its fleet peers (the median
of the pairs of its class: the same leaf, or across the spine, at the same line rate).

One slow pair says little on its own; the pattern of slow pairs says where the fault is
(`triangulate`), checked in this order:
- a spine group: every pair crossing it slow while pairs under one leaf are healthy;
- a host (its NIC, cable or PCIe path to the NIC): slow with every partner (at least two);
- a leaf switch: every tested host under it slow with every partner (folds their host faults);
- the path between two hosts: slow only together.
A slow pair with a host that has no other partner yet is a pair fault whose both hosts are
suspects: the planner tests them with new partners first. Pure: no I/O (docs/network.md).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

NET_EFFICIENCY = 0.92  # NCCL send/recv over InfiniBand NDR, of the line rate
MIN_BASELINE = 3  # earlier healthy figures before a pair has a baseline
MIN_PEERS = 3  # pairs of a class before their median judges any of them
NETWORK_TESTS = frozenset({"net_write"})  # judged against the NIC's line rate
PairKey = tuple[str, str]  # (host, peer_host), host < peer_host


@dataclass(frozen=True)
class Place:
    leaf: str
    spine: str | None
    domain: str | None
    line_rate_bps: float


@dataclass(frozen=True)
class Floors:
    expected: float = 0.7
    baseline: float = 0.8
    fleet: float = 0.93


@dataclass(frozen=True)
class PairFigures:
    """The figures of one unordered host pair for one test: newest first."""

    key: PairKey
    test: str
    values: tuple[float, ...]  # newest first
    failed: bool = False  # the newest result is an error
    at: datetime | None = None  # when the newest was measured
    error: str | None = None  # the newest result's error, as its rank posted it
    job: str | None = None  # the scheduler job that measured the newest (a pair job)


@dataclass
class PairVerdict:
    host: str
    peer_host: str
    test: str
    measured: float | None
    expected: float | None
    baseline: float | None
    fleet: float | None
    ratio: float | None  # measured over the strictest of the three references
    verdict: str  # healthy | degraded | failed | unknown
    reason: str
    cause: str | None = None  # host:<h> | leaf:<l> | spine:<s> | path (triangulate)
    at: datetime | None = None  # when the newest figure was measured
    job: str | None = None  # the pair job that measured it (the dashboard names it)

    @property
    def slow(self) -> bool:
        return self.verdict in ("degraded", "failed")


@dataclass
class NetFault:
    kind: str  # host | leaf | spine | path
    subject: str  # the host, the switch, or "a~b"
    hosts: list[str]
    pairs: list[PairKey]
    ratio: float | None
    reason: str
    resolved: bool = True  # False: a path fault that more partners could yet move to a host


@dataclass
class NetworkJudgement:
    pairs: list[PairVerdict]
    faults: list[NetFault] = field(default_factory=list)
    suspects: list[str] = field(default_factory=list)  # most slow pairs first

    def about(self, host: str) -> NetworkJudgement:
        """What concerns one host: its pairs, the faults naming it, whether it is a suspect
        (the judgement is the whole fleet's: triangulation needs every pair)."""
        return NetworkJudgement(
            [v for v in self.pairs if host in (v.host, v.peer_host)],
            [f for f in self.faults if host in f.hosts],
            [s for s in self.suspects if s == host])


def pair_key(a: str, b: str) -> PairKey:
    return (a, b) if a < b else (b, a)


def crosses(places: Mapping[str, Place], key: PairKey) -> tuple[str, ...]:
    """The spine groups a pair's traffic crosses (none under one leaf)."""
    a, b = places[key[0]], places[key[1]]
    if a.leaf == b.leaf:
        return ()
    return tuple(dict.fromkeys(s for s in (a.spine, b.spine) if s))


def expected_of(places: Mapping[str, Place], key: PairKey) -> float | None:
    if key[0] not in places or key[1] not in places:
        return None
    return min(places[key[0]].line_rate_bps, places[key[1]].line_rate_bps) * NET_EFFICIENCY


def _class(places: Mapping[str, Place], key: PairKey) -> tuple[str, float | None]:
    exp = expected_of(places, key)
    if exp is None:
        return ("unmapped", None)
    return ("spine" if crosses(places, key) else "leaf", exp)


def judge_pairs(figures: Iterable[PairFigures], places: Mapping[str, Place],
                floors: Floors) -> list[PairVerdict]:
    figs = list(figures)
    by_class: dict[tuple[str, str, float | None], list[float]] = defaultdict(list)
    for f in figs:
        if f.values and not f.failed:
            by_class[(f.test, *_class(places, f.key))].append(f.values[0])
    out = [_judge(f, places, floors, by_class) for f in figs]
    for v, f in zip(out, figs, strict=True):
        v.at, v.job = f.at, f.job
    return out


def _judge(f: PairFigures, places: Mapping[str, Place], floors: Floors,
           by_class: Mapping[tuple[str, str, float | None], list[float]]) -> PairVerdict:
    host, peer = f.key
    expected = expected_of(places, f.key)
    if expected is not None and f.test not in NETWORK_TESTS:
        expected = None  # an NVL72 cross-tray copy: NVLink, not the NIC; baseline and peers
    if host not in places or peer not in places:  # no leaf to triangulate by
        return PairVerdict(host, peer, f.test, f.values[0] if f.values else None, None, None,
                           None, None, "unknown", f"{host} or {peer} is not on the network "
                           "map (PUT /api/v1/network/hosts)")
    if f.failed or not f.values:
        return PairVerdict(host, peer, f.test, None, expected, None, None, None, "failed",
                           f"{f.test} between {host} and {peer} failed"
                           + (f": {f.error[:300]}" if f.error else ""))
    measured = f.values[0]
    healthy_before = [v for v in f.values[1:] if expected is None
                      or v >= floors.expected * expected]
    baseline = statistics.median(healthy_before) if len(healthy_before) >= MIN_BASELINE else None
    peers = by_class.get((f.test, *_class(places, f.key)), [])
    fleet = statistics.median(peers) if len(peers) >= MIN_PEERS else None
    refs = [(expected, floors.expected, "expected from the network map"),
            (baseline, floors.baseline, "its baseline"), (fleet, floors.fleet, "its fleet peers")]
    low = [(measured / ref, floor, what) for ref, floor, what in refs
           if ref and measured < floor * ref]
    ratios = [measured / ref for ref, _, _ in refs if ref]
    ratio = min(ratios) if ratios else None
    gb = measured / 1e9
    if low:
        words = "; ".join(f"{r:.2f} of {what} (floor {fl:g})" for r, fl, what in low)
        return PairVerdict(host, peer, f.test, measured, expected, baseline, fleet, ratio,
                           "degraded", f"{host} <-> {peer} {f.test} {gb:.1f} GB/s: {words}")
    verdict = "healthy" if ratios else "unknown"
    return PairVerdict(host, peer, f.test, measured, expected, baseline, fleet, ratio, verdict,
                       f"{host} <-> {peer} {f.test} {gb:.1f} GB/s")
