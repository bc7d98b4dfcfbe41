"""Rack-scale NVLink domains (GB200 NVL72): group trays by cluster UUID and clique, roll up.

An NVL72 rack joins 18 compute trays (hosts) through 9 NVLink switch trays into one NVLink
domain; NVML's GPU fabric info names it by a cluster UUID and splits it into cliques (NVLink
partitions). Only GPUs of one clique can talk over NVLink, so "which nodes may share a job"
is: trays of one clique whose GPUs are all healthy.

This module is pure: stored verdicts (each GPU's judged verdict and reason, each tray's host
verdict and staleness) and the fabric info in, a roll-up with its reason in words out. It
judges nothing again: a GPU whose fabric is IN_PROGRESS or whose health says "insufficient
NVLinks" was already judged by `fabric_state.py`; here those verdicts are counted and named.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from peerwatch.app.analysis.verdict import Verdict

_HEX32 = re.compile(r"[0-9a-f]{32}")
SHOWN = 3  # problems named one by one in a reason before "+n more"


def domain_key(cluster_uuid: str | None) -> str | None:
    """The domain id of a cluster UUID: 32 lower-case hex digits (the way the real probe
    writes NVML's bytes); None for no UUID, an all-zero one (a GPU in no multi-node domain,
    as on an HGX board) or one that is not a UUID."""
    if not cluster_uuid:
        return None
    key = cluster_uuid.replace("-", "").lower()
    if not _HEX32.fullmatch(key) or key == "0" * 32:
        return None
    return key


@dataclass(frozen=True)
class MemberGpu:
    """One GPU of a domain: its fabric registration as stored and its judged verdict."""

    host: str
    gpu: int
    clique_id: int | None
    state: str | None
    status: str | None
    health: str | None
    health_issues: tuple[str, ...]
    verdict: Verdict
    reason: str

    @property
    def healthy(self) -> bool:
        return self.verdict is Verdict.HEALTHY


@dataclass(frozen=True)
class Tray:
    """One compute tray (host) of a domain with its judged host verdict."""

    host: str
    verdict: Verdict
    reason: str
    stale: bool
    gpus: tuple[MemberGpu, ...]
    apart: tuple[tuple[int, int], ...] = ()  # pair faults: GPUs never in one job

    @property
    def fresh(self) -> bool:
        """Reporting (not stale), as `/scheduler/hosts` counts a host that may take a job."""
        return not self.stale

    def healthy_gpus(self, clique: int | None) -> list[int]:
        """GPUs of this tray in `clique` a job may use: fresh tray, GPU judged healthy."""
        if not self.fresh:
            return []
        return [g.gpu for g in self.gpus if g.clique_id == clique and g.healthy]

    def healthy_in(self, clique: int | None) -> bool:
        """Every GPU of this tray in `clique` judged healthy (and it has some there)."""
        mine = [g for g in self.gpus if g.clique_id == clique]
        return self.fresh and bool(mine) and all(g.healthy for g in mine)


@dataclass(frozen=True)
class Clique:
    clique_id: int | None
    hosts: tuple[str, ...]
    gpus: int
    healthy_gpus: int
    job_span: tuple[str, ...]  # trays of this clique whose GPUs are all healthy


@dataclass(frozen=True)
class DomainRollup:
    domain: str
    verdict: Verdict
    reason: str
    trays: tuple[Tray, ...]
    cliques: tuple[Clique, ...]  # largest first
    states: dict[str, int]  # fabric state -> GPUs
    health: dict[str, int]  # health summary -> GPUs

    @property
    def gpus(self) -> int:
        return sum(len(t.gpus) for t in self.trays)

    @property
    def largest_healthy(self) -> Clique | None:
        return largest_healthy(self.cliques)


def largest_healthy(cliques: Sequence[Clique]) -> Clique | None:
    """The clique with the most wholly healthy trays (None: no healthy tray anywhere)."""
    best = max(cliques, key=lambda c: (len(c.job_span), c.healthy_gpus), default=None)
    return best if best is not None and best.job_span else None


def _cliques(trays: Sequence[Tray]) -> tuple[Clique, ...]:
    ids = sorted({g.clique_id for t in trays for g in t.gpus}, key=lambda c: (c is None, c))
    out = []
    for cid in ids:
        members = [t for t in trays if any(g.clique_id == cid for g in t.gpus)]
        gpus = [g for t in members for g in t.gpus if g.clique_id == cid]
        out.append(Clique(
            cid, tuple(t.host for t in members), len(gpus),
            sum(len(t.healthy_gpus(cid)) for t in members),
            tuple(t.host for t in members if t.healthy_in(cid))))
    return tuple(sorted(out, key=lambda c: -c.gpus))


def _n(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _named(items: Sequence[str]) -> str:
    more = f" (+{len(items) - SHOWN} more)" if len(items) > SHOWN else ""
    return "; ".join(items[:SHOWN]) + more


def _problems(trays: Sequence[Tray], cliques: Sequence[Clique], states: Counter[str],
              health: Counter[str]) -> list[str]:
    gpus = [g for t in trays if t.fresh for g in t.gpus]
    out = []
    stale = [t.host for t in trays if not t.fresh]
    if stale:
        out.append(f"{len(stale)} of {_n(len(trays), 'tray')} stale or not judged "
                   f"({_named(stale)})")
    bad = [g for g in gpus if not g.healthy and g.verdict is not Verdict.UNKNOWN]
    if bad:
        out.append(f"{len(bad)} of {_n(len(gpus), 'GPU')} not healthy: "
                   + _named([f"{g.host} GPU{g.gpu} {g.verdict.value}" for g in bad]))
    not_done = {s: n for s, n in states.items() if s != "completed"}
    if not_done:
        out.append("fabric not COMPLETED on " + ", ".join(
            f"{_n(n, 'GPU')} ({s})" for s, n in sorted(not_done.items())))
    limited = {h: n for h, n in health.items() if h not in ("healthy", "none")}
    if limited:
        out.append("fabric health " + ", ".join(f"{h} on {_n(n, 'GPU')}"
                                                for h, n in sorted(limited.items())))
    if len(cliques) > 1:
        out.append(f"split into {len(cliques)} cliques: " + ", ".join(
            f"{c.clique_id} ({_n(c.gpus, 'GPU')})" for c in cliques))
    return out


def _unjudged(trays: Sequence[Tray]) -> list[str]:
    """What keeps a domain from being called healthy without being a fault: trays whose pairs
    were not measured yet (host verdict unknown), GPUs not judged yet."""
    out = []
    waiting = [t.host for t in trays if t.fresh and t.verdict is Verdict.UNKNOWN]
    if waiting:
        out.append(f"{_n(len(waiting), 'tray')} not measured yet ({_named(waiting)})")
    gpus = [g for t in trays if t.fresh for g in t.gpus if g.verdict is Verdict.UNKNOWN]
    if gpus:
        out.append(f"{_n(len(gpus), 'GPU')} not judged yet")
    return out


def _verdict(trays: Sequence[Tray], problems: Sequence[str], unjudged: Sequence[str]) -> Verdict:
    fresh = [t for t in trays if t.fresh]
    if not fresh:
        return Verdict.UNKNOWN
    if all(t.verdict is Verdict.DOWN for t in fresh):
        return Verdict.DOWN
    if problems:
        return Verdict.DEGRADED
    return Verdict.UNKNOWN if unjudged else Verdict.HEALTHY


def roll_up(domain: str, trays: Iterable[Tray]) -> DomainRollup:
    """The domain's verdict and reason from its trays' stored verdicts and fabric info."""
    ordered = tuple(sorted(trays, key=lambda t: t.host))
    gpus = [g for t in ordered for g in t.gpus]
    states = Counter(g.state or "unknown" for g in gpus)
    health = Counter(g.health or "none" for g in gpus)
    cliques = _cliques(ordered)
    problems = _problems(ordered, cliques, states, health)
    unjudged = _unjudged(ordered)
    verdict = _verdict(ordered, problems, unjudged)
    size = f"{_n(len(ordered), 'tray')}, {_n(len(gpus), 'GPU')}"
    if not any(t.fresh for t in ordered):
        reason = f"{size}: no tray reporting (every one stale or not judged)"
    elif problems or unjudged:
        reason = f"{size}: " + "; ".join([*problems, *unjudged]) + f"; {_span_words(cliques)}"
    else:
        reason = f"{size} in clique {cliques[0].clique_id}, fabric COMPLETED and healthy"
    return DomainRollup(domain, verdict, reason, ordered, cliques, dict(states), dict(health))


def _span_words(cliques: Sequence[Clique]) -> str:
    best = largest_healthy(cliques)
    if best is None:
        return "no tray of any clique is wholly healthy"
    return (f"a job may span {_n(len(best.job_span), 'healthy tray')} of clique "
            f"{best.clique_id}")
