"""Where a slow host pair's fault is: a spine, a host's NIC path, a leaf, or the path between
two hosts (the order and rules: app/analysis/network.py's docstring, docs/network.md).

Every slow pair gets exactly one `cause`, so an operator gets one page per fault: a bad cable
is one HostNetworkPathSlow, not one page per partner; a bad leaf one NetworkSwitchSlow, not
one per host under it. The PromQL twins (app/alerting/rules_network.py) apply the same rules
to the server's pair verdicts.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

from peerwatch.app.analysis.network import (
    NetFault,
    NetworkJudgement,
    PairKey,
    PairVerdict,
    Place,
    crosses,
)

MIN_PARTNERS = 2  # partners a host is tested with before "slow with every partner" says host


def _pairs(verdicts: list[PairVerdict]) -> dict[PairKey, list[PairVerdict]]:
    out: dict[PairKey, list[PairVerdict]] = defaultdict(list)
    for v in verdicts:
        if v.verdict != "unknown":
            out[(v.host, v.peer_host)].append(v)
    return out


def _ratio(vs: list[PairVerdict]) -> float | None:
    known = [v.ratio for v in vs if v.ratio is not None]
    return min(known) if known else None


def triangulate(verdicts: list[PairVerdict], places: Mapping[str, Place]) -> NetworkJudgement:
    pairs = _pairs(verdicts)
    slow = {k for k, vs in pairs.items() if any(v.slow for v in vs)}
    faults: list[NetFault] = []
    cause: dict[PairKey, str] = {}
    spines = _spine_faults(pairs, slow, places)
    for spine, keys in spines.items():
        faults.append(_fault("spine", spine, keys, pairs, "every tested pair crossing spine "
                             f"group {spine} is slow, and no one host is in all of them: the "
                             "spine (congestion, a bad uplink or its routing)"))
        cause.update({k: f"spine:{spine}" for k in keys if k not in cause})
    candidates = _candidates(pairs, slow)
    leaves = _leaf_faults(candidates, pairs, places)
    in_bad_leaf = {h: leaf for leaf, members in leaves.items() for h in members}
    for leaf, members in leaves.items():
        keys = sorted(k for k in slow if set(k) & set(members))
        fault = _fault("leaf", leaf, keys, pairs, f"every tested host under leaf {leaf} "
                       f"({', '.join(members)}) is slow with every partner: the leaf switch")
        fault.hosts = list(members)
        faults.append(fault)
        cause.update({k: f"leaf:{leaf}" for k in keys if k not in cause})
    for host, keys in sorted(candidates.items()):
        own = [k for k in keys if not k_spine(k, cause)
               and _other(k, host) not in in_bad_leaf]
        if host in in_bad_leaf or not own:  # every pair of it explained by a leaf or spine
            continue
        faults.append(_fault("host", host, keys, pairs, f"{host} is slow with every one of "
                             f"its {len(keys)} tested partners: its NIC, cable or PCIe path "
                             "to the NIC"))
        cause.update({k: f"host:{host}" for k in keys if k not in cause})
    suspects: set[str] = set()
    for key in sorted(slow - set(cause)):
        partners = [len(_partners(pairs, h)) for h in key]
        resolved = min(partners) >= MIN_PARTNERS
        if not resolved:
            suspects.update(h for h, n in zip(key, partners, strict=True) if n < MIN_PARTNERS)
        f = _fault("path", f"{key[0]}~{key[1]}", [key], pairs, f"{key[0]} and {key[1]} are "
                   "slow only together: the path between them (a cable, a switch port or a "
                   "route)" if resolved else f"{key[0]} and {key[1]} are slow together and "
                   "one of them has no other tested partner yet: not yet told apart")
        f.resolved = resolved
        faults.append(f)
        cause[key] = "path"
        suspects.update(_stale_ends(pairs, key))
    for v in verdicts:
        if v.slow:
            v.cause = cause.get((v.host, v.peer_host))
    slow_count = {h: sum(h in k for k in slow) for h in suspects}
    return NetworkJudgement(verdicts, faults, sorted(suspects, key=lambda h: (-slow_count[h], h)))


def _stale_ends(pairs: Mapping[PairKey, list[PairVerdict]], key: PairKey) -> list[str]:
    """Ends of a slow pair with another pair measured before it: that older figure may no
    longer hold, so the planner tests them again (a bad cable shows as a path fault until
    the host's other pairs are measured since)."""
    at = max((v.at for v in pairs[key] if v.at), default=None)
    if at is None:
        return []
    return [h for h in key if any(k != key and any(v.at and v.at < at for v in vs)
                                  for k, vs in pairs.items() if h in k)]


def k_spine(key: PairKey, cause: Mapping[PairKey, str]) -> bool:
    return cause.get(key, "").startswith("spine:")


def _other(key: PairKey, host: str) -> str:
    return key[1] if key[0] == host else key[0]


def _partners(pairs: Mapping[PairKey, list[PairVerdict]], host: str) -> list[PairKey]:
    return [k for k in pairs if host in k]


def _fault(kind: str, subject: str, keys: list[PairKey],
           pairs: Mapping[PairKey, list[PairVerdict]], reason: str) -> NetFault:
    ratios = [r for k in keys if (r := _ratio(pairs[k])) is not None]
    hosts = sorted({h for k in keys for h in k}) if kind != "host" else [subject]
    return NetFault(kind, subject, hosts, sorted(keys), min(ratios) if ratios else None, reason)


def _spine_faults(pairs: Mapping[PairKey, list[PairVerdict]], slow: set[PairKey],
                  places: Mapping[str, Place]) -> dict[str, list[PairKey]]:
    """Spine groups every tested crossing pair of which is slow (at least two), with no host
    in all of them (that host's own path would say as much)."""
    through: dict[str, list[PairKey]] = defaultdict(list)
    for key in pairs:
        if key[0] in places and key[1] in places:
            for spine in crosses(places, key):
                through[spine].append(key)
    out = {}
    for spine, keys in through.items():
        common = set(keys[0]).intersection(*map(set, keys))
        if len(keys) >= 2 and all(k in slow for k in keys) and not common:
            out[spine] = sorted(keys)
    return out


def _candidates(pairs: Mapping[PairKey, list[PairVerdict]], slow: set[PairKey]
                ) -> dict[str, list[PairKey]]:
    """Hosts slow with every partner (at least `MIN_PARTNERS`)."""
    out = {}
    for host in sorted({h for k in pairs for h in k}):
        keys = _partners(pairs, host)
        if len(keys) >= MIN_PARTNERS and all(k in slow for k in keys):
            out[host] = sorted(keys)
    return out


def _leaf_faults(hosts: Mapping[str, list[PairKey]], pairs: Mapping[PairKey, list[PairVerdict]],
                 places: Mapping[str, Place]) -> dict[str, list[str]]:
    """Leaves whose every tested host (at least two) is slow with every partner."""
    tested: dict[str, set[str]] = defaultdict(set)
    for key in pairs:
        for h in key:
            if h in places:
                tested[places[h].leaf].add(h)
    return {leaf: sorted(members) for leaf, members in sorted(tested.items())
            if len(members) >= 2 and members <= set(hosts)}
