"""Placement across nodes: k healthy nodes whose measured pairwise bandwidth is best.

Candidates are grouped by how close they sit: an NVL72 domain (NVLink between trays) first,
then a leaf (one switch hop), then the whole fleet (across the spine, fullest leaves first).
Within a group the nodes are chosen greedily: the fastest measured pair, then each time the
node whose slowest pair to those chosen is fastest; an untested pair counts at what the map
expects of it, so measured beats promised only when it is faster. The closest group that
holds k nodes wins; among groups of one kind, the one whose slowest pair is fastest. Hosts
the scheduler would not give a job, or that a network fault names, are left out with why.
Pure (docs/network.md).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass

from peerwatch.app.analysis.network import NetworkJudgement, PairKey, Place, expected_of, pair_key


@dataclass(frozen=True)
class Choice:
    nodes: list[str]
    pairs: dict[PairKey, tuple[float | None, str]]  # measured (None: untested), verdict
    min_bps: float | None
    why: str


def faulted_hosts(j: NetworkJudgement) -> dict[str, str]:
    """Hosts a host or leaf fault names, with the fault's words."""
    out: dict[str, str] = {}
    for f in j.faults:
        if f.kind in ("host", "leaf"):
            for h in f.hosts if f.kind == "leaf" else [f.subject]:
                out.setdefault(h, f.reason)
    return out


def choose(k: int, healthy: list[str], places: Mapping[str, Place], j: NetworkJudgement,
           left_out: dict[str, str]) -> Choice | None:
    measured = {(v.host, v.peer_host): (v.measured, v.verdict) for v in j.pairs}
    bad = faulted_hosts(j)
    ok = []
    for h in sorted(healthy):
        if h not in places:
            left_out[h] = "not on the network map"
        elif h in bad:
            left_out[h] = f"network fault: {bad[h]}"
        else:
            ok.append(h)
    for kind in ("domain", "leaf"):
        groups: dict[str, list[str]] = defaultdict(list)
        for h in ok:
            if key := getattr(places[h], kind):
                groups[key].append(h)
        picks = [(_greedy(hs, k, places, measured), key) for key, hs in groups.items()
                 if len(hs) >= k]
        if picks:
            (nodes, low), key = max(picks, key=lambda p: (p[0][1], p[1]))
            return _choice(nodes, low, measured, f"one {kind} ({key}): "
                           f"{'NVLink between trays' if kind == 'domain' else 'one switch hop'}")
    if len(ok) < k:
        return None
    by_leaf: dict[str, list[str]] = defaultdict(list)
    for h in ok:
        by_leaf[places[h].leaf].append(h)
    pool = [h for leaf in sorted(by_leaf, key=lambda lf: -len(by_leaf[lf])) for h in by_leaf[leaf]]
    nodes, low = _greedy(pool, k, places, measured)
    return _choice(nodes, low, measured, "no leaf or domain holds k healthy nodes: across the "
                   f"spine, over {len({places[h].leaf for h in nodes})} leaves")


def _figure(a: str, b: str, places: Mapping[str, Place],
            measured: Mapping[PairKey, tuple[float | None, str]]) -> float:
    got = measured.get(pair_key(a, b))
    if got and got[0] is not None:
        return got[0]
    return expected_of(places, pair_key(a, b)) or 0.0


def _greedy(hosts: list[str], k: int, places: Mapping[str, Place],
            measured: Mapping[PairKey, tuple[float | None, str]]) -> tuple[list[str], float]:
    if k == 1:
        return [hosts[0]], float("inf")
    best = max(((a, b) for i, a in enumerate(hosts) for b in hosts[i + 1:]),
               key=lambda p: (_figure(p[0], p[1], places, measured),
                              [-ord(c) for c in p[0] + p[1]]))
    chosen = list(best)
    while len(chosen) < k:
        rest = [h for h in hosts if h not in chosen]
        chosen.append(max(rest, key=lambda h: min(_figure(h, c, places, measured)
                                                  for c in chosen)))
    low = min(_figure(a, b, places, measured) for i, a in enumerate(chosen)
              for b in chosen[i + 1:])
    return sorted(chosen), low


def _choice(nodes: list[str], low: float,
            measured: Mapping[PairKey, tuple[float | None, str]], why: str) -> Choice:
    pairs = {pair_key(a, b): measured.get(pair_key(a, b), (None, "untested"))
             for i, a in enumerate(nodes) for b in nodes[i + 1:]}
    figures = [m for m, _ in pairs.values() if m is not None]
    return Choice(nodes, pairs, min(figures) if figures else None, why)
