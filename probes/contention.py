"""Whose bytes were on the probed links? Foreign traffic from NVLink counters around a test.

NVLink THROUGHPUT_DATA_TX/RX count every payload byte a port sent or received (KiB-granular,
exact: 10 GiB copied raised the H200's TX sum by exactly 10 GiB). Read them just before and
just after a test; subtract the test's own bytes (`Measurement.wire_bytes`); what is left on
the directions the test used was someone else's. Only the directions the data took count:
a copy src -> dst shares src's TX and dst's RX with other jobs, not the reverse directions
(NVLink is full duplex). On a direct mesh, where a port names its peer GPU, only the ports to
that peer count; behind NVSwitch every port of the GPU carries the copy.

One foreign job appears twice (on its sender's TX and its receiver's RX), so the foreign
figure is the largest excess over the probed directions, not their sum: a lower bound.
A test that used no NVLink (PCIe, host-staged) has no counters to judge by: foreign 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from peerwatch.probes.fabric import TestSpec
from peerwatch.probes.report import LinkCounters, NvLinkPort, test_scope
from peerwatch.probes.test_kinds import kind_of

# (gpu, "tx" | "rx", peer): one direction of one GPU's ports that a test's data used.
Direction = tuple[int, str, int | None]


@dataclass(frozen=True)
class ContentionRule:
    """When foreign bytes make a sample contended: above `fraction` of the probe's own bytes
    and above `floor_bytes` (KiB-granular counters on up to 18 ports read twice round up)."""

    fraction: float = 0.05
    floor_bytes: int = 1 << 20

    def contended(self, foreign: int, own: int) -> bool:
        return foreign > max(self.floor_bytes, self.fraction * own)


def directions(spec: TestSpec) -> list[Direction]:
    """The (gpu, tx|rx, peer) directions the test's data travels over."""
    scope = test_scope(spec.test)
    if scope == "set" or spec.joint:  # a ring, an all-to-all: every GPU's links, both ways
        return [(g, way, None) for g in spec.gpus for way in ("tx", "rx")]
    if scope == "gpu":  # PCIe and local memory: no NVLink counter can tell
        return []
    assert spec.src is not None and spec.dst is not None
    s, d = spec.src, spec.dst
    if kind_of(spec.test).both_ways:
        # latency: requests go src -> dst and the loaded data comes back; both can queue
        return [(s, "tx", d), (d, "rx", s), (d, "tx", s), (s, "rx", d)]
    return [(s, "tx", d), (d, "rx", s)]


def own_bytes(spec: TestSpec, wire: Mapping[int, int], direction: Direction) -> int:
    gpu, way, peer = direction
    if way == "tx" or test_scope(spec.test) == "set" or spec.joint:
        # a ring receives what it sends; so does each GPU of an all-to-all
        return wire.get(gpu, 0)
    return wire.get(peer, 0) if peer is not None else 0


def _ports_toward(ports: list[NvLinkPort], peer: int | None) -> set[int] | None:
    """Port numbers carrying traffic to `peer`; None means all (switch, or peer unknown)."""
    if peer is None or not any(p.remote_gpu is not None for p in ports):
        return None
    return {p.link for p in ports if p.remote_gpu == peer}


def _total(sample: list[LinkCounters], way: str, links: set[int] | None) -> int | None:
    values = [c.tx_bytes if way == "tx" else c.rx_bytes
              for c in sample if links is None or c.link in links]
    if not values or any(v is None for v in values):
        return None
    return sum(v for v in values if v is not None)


def foreign_bytes(
    spec: TestSpec,
    wire: Mapping[int, int],
    before: Mapping[int, list[LinkCounters]],
    after: Mapping[int, list[LinkCounters]],
    ports: Mapping[int, list[NvLinkPort]],
) -> int:
    """Bytes on the test's directions that were not the test's own (0 when unknowable)."""
    if not any(wire.values()):
        return 0
    worst = 0
    for direction in directions(spec):
        gpu, way, peer = direction
        links = _ports_toward(ports.get(gpu, []), peer)
        b = _total(before.get(gpu, []), way, links)
        a = _total(after.get(gpu, []), way, links)
        if a is None or b is None:
            continue
        worst = max(worst, a - b - own_bytes(spec, wire, direction))
    return max(worst, 0)


def probe_bytes(spec: TestSpec, wire: Mapping[int, int]) -> int:
    """The test's own bytes on its busiest direction: what `ContentionRule.fraction` is of."""
    return max((own_bytes(spec, wire, d) for d in directions(spec)), default=0)
