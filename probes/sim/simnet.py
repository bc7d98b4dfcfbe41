"""A simulated two-tier leaf/spine network between hosts, and its faults.

Hosts sit under leaf (top-of-rack) switches; leaves sit under spine groups; two hosts under
one leaf cross only that leaf, two under different leaves cross the spine. Each host has one
NIC of `line_rate_bps`; an NVL72 domain groups trays whose cross-tray traffic is NVLink, not
the network. `measure()` is what a pair job's rank reports for `net_write` when the transfer
is simulated (tests, the demo, the real-Slurm test): the slower NIC's line rate x the
efficiency of NCCL send/recv over InfiniBand, x every fault on the path, with seeded noise.

Faults (`NetFault`): a bad cable or NIC (`BadCable`: one host slow with every partner), a
congested spine (`CongestedSpine`: every pair crossing it slow), a bad path between two hosts
only (`PairPathSlow`: e.g. one ECMP route), and a leaf switch gone bad (`LeafSlow`: every
host under it slow). The server never sees this module: it sees results and the map.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

NET_EFFICIENCY = 0.92  # NCCL send/recv over IB NDR, of the line rate (nccl-tests' busbw)
NDR_400_BPS = 400e9 / 8  # one 400 Gb/s port, bytes/s


@dataclass(frozen=True)
class SimHost:
    name: str
    leaf: str
    spine: str
    domain: str | None = None
    line_rate_bps: float = NDR_400_BPS


@dataclass(frozen=True)
class BadCable:
    host: str
    factor: float = 0.35


@dataclass(frozen=True)
class CongestedSpine:
    spine: str
    factor: float = 0.5


@dataclass(frozen=True)
class PairPathSlow:
    host: str
    peer_host: str
    factor: float = 0.4


@dataclass(frozen=True)
class LeafSlow:
    leaf: str
    factor: float = 0.45


NetFault = BadCable | CongestedSpine | PairPathSlow | LeafSlow


@dataclass
class SimNetwork:
    hosts: dict[str, SimHost]
    faults: list[NetFault] = field(default_factory=list)
    seed: int = 0
    noise: float = 0.01

    def path(self, a: str, b: str) -> tuple[str, ...]:
        """The switches between `a` and `b`: their leaf, or leaf, spine group(s), leaf."""
        ha, hb = self.hosts[a], self.hosts[b]
        if ha.leaf == hb.leaf:
            return (ha.leaf,)
        spines = (ha.spine,) if ha.spine == hb.spine else (ha.spine, hb.spine)
        return (ha.leaf, *spines, hb.leaf)

    def factor(self, a: str, b: str) -> float:
        """The product of every fault on the path between `a` and `b`."""
        path = self.path(a, b)
        f = 1.0
        for fault in self.faults:
            if isinstance(fault, BadCable) and fault.host in (a, b):
                f *= fault.factor
            elif isinstance(fault, CongestedSpine) and fault.spine in path[1:-1]:
                f *= fault.factor
            elif isinstance(fault, PairPathSlow) and {fault.host, fault.peer_host} == {a, b}:
                f *= fault.factor
            elif isinstance(fault, LeafSlow) and fault.leaf in path:
                f *= fault.factor
        return f

    def measure(self, a: str, b: str, salt: int = 0) -> float:
        """`net_write` from `a` to `b`, bytes/s (seeded per pair and `salt`)."""
        rate = min(self.hosts[a].line_rate_bps, self.hosts[b].line_rate_bps)
        rng = random.Random(f"{self.seed}:{a}:{b}:{salt}")
        jitter = 1.0 + rng.uniform(-self.noise, self.noise)
        return rate * NET_EFFICIENCY * self.factor(a, b) * jitter


def leaf_spine(leaves: int, per_leaf: int, spines: int = 1, prefix: str = "node",
               domain_size: int = 0) -> SimNetwork:
    """`leaves` x `per_leaf` hosts named `<prefix>-<n>` (from 1), leaf `leaf<i>` under spine
    group `spine<i % spines>`; with `domain_size`, each run of that many hosts is one NVL72
    domain `nvl<k>`."""
    hosts: dict[str, SimHost] = {}
    n = 0
    for leaf in range(leaves):
        for _ in range(per_leaf):
            n += 1
            name = f"{prefix}-{n}"
            domain = f"nvl{(n - 1) // domain_size}" if domain_size else None
            hosts[name] = SimHost(name, f"leaf{leaf}", f"spine{leaf % spines}", domain)
    return SimNetwork(hosts)


def network_map(net: SimNetwork) -> list[dict[str, object]]:
    """The map as `PUT /api/v1/network/hosts` takes it."""
    return [{"host": h.name, "leaf": h.leaf, "spine": h.spine, "domain": h.domain,
             "line_rate_bps": h.line_rate_bps} for h in net.hosts.values()]


FAULTS = {"bad_cable": BadCable, "congested_spine": CongestedSpine,
          "pair_path_slow": PairPathSlow, "leaf_slow": LeafSlow}


def fault_of(raw: dict[str, object]) -> NetFault:
    """A fault from its JSON: {"kind": "bad_cable", "host": ...} (a simnet file's)."""
    fields = dict(raw)
    kind = str(fields.pop("kind", ""))
    if kind not in FAULTS:
        raise ValueError(f"unknown network fault {kind!r}: one of {', '.join(FAULTS)}")
    return FAULTS[kind](**fields)  # type: ignore[arg-type]


def simnet_json(net: SimNetwork) -> dict[str, object]:
    """The network as a rank's `--simnet` file holds it (faults included)."""
    kinds = {v: k for k, v in FAULTS.items()}
    return {"seed": net.seed,
            "hosts": [vars(h) for h in net.hosts.values()],
            "faults": [{"kind": kinds[type(f)], **vars(f)} for f in net.faults]}
