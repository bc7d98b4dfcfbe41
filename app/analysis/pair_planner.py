"""Which host pairs to test next: suspects first, then the trays of each NVL72 domain, then a
round-robin ring under each leaf, then one pair across the spine per pair of leaves.

Each host is in at most one planned pair (a test job takes two whole idle nodes), a pair
tested within `retest` is not planned again unless a host of it is a suspect, and each
kind of coverage rotates: a ring of n hosts under a leaf is covered in n jobs, the
neighbour chosen by `round_no`, so successive rounds test different partners. Only hosts
the scheduler could give a job (healthy, fresh: `eligible`) are planned; the others are
named in `left_out` with the reason. Pure: the route reads, this decides (docs/network.md).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from peerwatch.app.analysis.network import PairKey, Place, pair_key


@dataclass(frozen=True)
class Planned:
    host: str
    peer_host: str
    reason: str


@dataclass(frozen=True)
class PlanInputs:
    places: Mapping[str, Place]
    eligible: set[str]  # healthy, fresh hosts
    busy: set[str]  # hosts in a pair job not finished yet
    last_tested: Mapping[PairKey, datetime]
    suspects: list[str]
    now: datetime
    retest: timedelta = timedelta(hours=6)
    max_pairs: int = 16


def plan(inputs: PlanInputs) -> tuple[list[Planned], dict[str, str]]:
    free = sorted(h for h in inputs.places if h in inputs.eligible and h not in inputs.busy)
    left_out = {h: ("in a pair job already" if h in inputs.busy else "not healthy or not fresh")
                for h in inputs.places if h not in free}
    taken: set[str] = set()
    out: list[Planned] = []
    for a, b, why in _candidates(inputs, free):
        if len(out) >= inputs.max_pairs:
            break
        if a in taken or b in taken or a == b:
            continue
        suspect = a in inputs.suspects or b in inputs.suspects
        last = inputs.last_tested.get(pair_key(a, b))
        if not suspect and last is not None and inputs.now - last < inputs.retest:
            continue
        taken.update((a, b))
        out.append(Planned(a, b, why))
    return out, left_out


def _candidates(inputs: PlanInputs, free: list[str]) -> Iterable[tuple[str, str, str]]:
    yield from _suspect_pairs(inputs, free)
    for group, hosts in sorted(_groups(inputs.places, free, "domain").items()):
        yield from _ring(hosts, inputs, f"NVL72 domain {group} trays")
    leaves = _groups(inputs.places, free, "leaf")
    for leaf, hosts in sorted(leaves.items()):
        yield from _ring(hosts, inputs, f"leaf {leaf} round-robin")
    yield from _across(leaves, inputs)


def _suspect_pairs(inputs: PlanInputs, free: list[str]) -> Iterable[tuple[str, str, str]]:
    """Each suspect with its partners, the other suspects last, the untested and then the
    longest untested first, under its own leaf (one hop) before across the spine."""
    for s in inputs.suspects:
        if s not in free:
            continue
        leaf = inputs.places[s].leaf
        partners = sorted((p for p in free if p != s), key=lambda p: (
            p in inputs.suspects, _age_key(inputs, (s, p)), inputs.places[p].leaf != leaf, p))
        for p in partners:
            yield s, p, f"suspect {s}: tested with a new partner to tell its NIC path from the path"


def _groups(places: Mapping[str, Place], hosts: list[str], attr: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = defaultdict(list)
    for h in hosts:
        key = getattr(places[h], attr)
        if key:
            out[key].append(h)
    return {k: sorted(v) for k, v in out.items() if len(v) >= 2}


def _ring(hosts: list[str], inputs: PlanInputs, why: str) -> Iterable[tuple[str, str, str]]:
    """Every neighbouring pair of the ring, the least recently tested first."""
    n = len(hosts)
    ring = [(hosts[i], hosts[(i + 1) % n]) for i in range(n if n > 2 else 1)]
    ring.sort(key=lambda p: _age_key(inputs, p))
    for a, b in ring:
        yield a, b, why


def _across(leaves: Mapping[str, list[str]], inputs: PlanInputs
            ) -> Iterable[tuple[str, str, str]]:
    """One pair per pair of leaves, across the spine: the least recently tested first."""
    names = sorted(leaves)
    pairs = []
    for i, la in enumerate(names):
        for lb in names[i + 1:]:
            options = [(a, b) for a in leaves[la] for b in leaves[lb]]
            pairs.append((min(options, key=lambda p: _age_key(inputs, p)), la, lb))
    pairs.sort(key=lambda p: _age_key(inputs, p[0]))
    for (a, b), la, lb in pairs:
        yield a, b, f"spine coverage {la} <-> {lb}"


def _age_key(inputs: PlanInputs, pair: tuple[str, str]) -> tuple[int, datetime]:
    last = inputs.last_tested.get(pair_key(*pair))
    return (0, inputs.now) if last is None else (1, last)
