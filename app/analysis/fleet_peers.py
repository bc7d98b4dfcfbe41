"""Fleet-relative expectations: a pair judged against the same pair on its fleet peers.

A topology formula cannot know that a SKU wires 12 of 18 links or that a firmware makes a
whole model 8 % slower, and a pair's own baseline absorbs a host that was slow from the
start. The same pair on the hosts that share its GPU model, topology class and driver (its
*peer group*) can: a pair far below its group's median is slow whatever its history says.

Pure functions over plain values (no database, no settings):
- `distribution`: a group's median, low percentile and size from its members' values;
- `peer_check`: one (pair, test) against its group: the ratio to the median and whether it
  is below the floor (only in groups with enough hosts);
- `flag_pairs`: the pair verdicts with the peer findings folded in, and the host's median
  ratio over its checked pair tests (a whole-host slowdown);
- `gpu_group`, `flag_gpus`: the per-GPU tests (h2d, d2h, local) grouped by GPU model, PCIe
  link (maximum generation and width) and driver, keyed (gpu, gpu) like their judged rows; a
  GPU whose link trained below its maximum is in no group (PCIeLinkDowntrained explains it);
- `sibling_gaps`: a group against the same model and topology under other drivers — the
  only way to see a slowdown that every member of a group shares.
Ratios are oriented like `expected.ratio`: 1.0 is the median, lower is worse (latency too).
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from peerwatch.app.analysis.expected import ratio
from peerwatch.app.analysis.fabric_health import GpuJudgement
from peerwatch.app.analysis.health import PairJudgement
from peerwatch.app.analysis.text import fmt_value
from peerwatch.app.analysis.verdict import Verdict
from peerwatch.probes.report import PcieLink, TestName, Unit, unit_of


@dataclass(frozen=True, order=True)
class GroupKey:
    """A peer group: the pairs the fleet expects to behave alike."""

    gpu_model: str
    topology: str  # topology class: "NVSwitch NV18", "NV4", "PCIe SYS"
    driver: str


@dataclass(frozen=True)
class Distribution:
    median: float
    low: float  # the worse-side percentile: slower bandwidth, longer latency
    hosts: int
    pairs: int


@dataclass(frozen=True)
class PeerCheck:
    """One (pair, test) against its group's median."""

    src: int
    dst: int
    test: TestName
    group: GroupKey
    value: float  # the figure compared: the better of the newest value and the baseline
    median: float
    hosts: int
    ratio: float
    flagged: bool

    @property
    def text(self) -> str:
        unit = unit_of(self.test)
        g = self.group
        return (f"{self.ratio:.2f} of the fleet median for {g.gpu_model} {g.topology} "
                f"{self.test.value} over {self.hosts} hosts on driver {g.driver} "
                f"({fmt_value(self.value, unit)} vs {fmt_value(self.median, unit)})")

    def facts(self) -> dict[str, object]:
        return {"test": self.test.value, "ratio": round(self.ratio, 4), "value": self.value,
                "median": self.median, "hosts": self.hosts, "flagged": self.flagged,
                "group": [self.group.gpu_model, self.group.topology, self.group.driver]}


@dataclass(frozen=True)
class HostPeers:
    """A host's standing among its peers: the median ratio over its checked (pair, test)s."""

    ratio: float | None
    checked: int
    flagged: int
    below: bool  # the median ratio is under the floor: the host as a whole is slow
    group: GroupKey | None = None  # the group most of its flagged checks are in
    pairs_below: int = 0  # ordered pairs with a flagged check
    gpus_below: tuple[int, ...] = ()  # the GPUs of those pairs and of flagged per-GPU tests

    @property
    def text(self) -> str:
        return (f"{self.ratio or 0.0:.2f} of its fleet peers (median over {self.checked} "
                f"pair tests, {self.flagged} below the floor)")

    def facts(self) -> dict[str, object]:
        g = self.group
        return {"ratio": None if self.ratio is None else round(self.ratio, 4),
                "checked": self.checked, "flagged": self.flagged, "below": self.below,
                "group": [g.gpu_model, g.topology, g.driver] if g else None,
                "pairs_below": self.pairs_below, "gpus_below": list(self.gpus_below)}


@dataclass(frozen=True)
class SiblingGap:
    """A group's median against the best sibling group (same model, topology, test; another
    driver), both with enough hosts."""

    group: GroupKey
    reference: GroupKey
    test: TestName
    ratio: float
    flagged: bool

    @property
    def text(self) -> str:
        return (f"driver {self.group.driver} is {self.ratio:.2f} of driver "
                f"{self.reference.driver} for {self.group.gpu_model} {self.group.topology} "
                f"{self.test.value}")


def topology_class(topology: str, via_nvswitch: bool) -> str:
    """How the fleet names a pair's shape: "NVSwitch NV18", "NV4", "PCIe SYS"."""
    if topology.startswith("NV"):
        return f"NVSwitch {topology}" if via_nvswitch else topology
    return f"PCIe {topology}"


def pcie_class(pcie: PcieLink) -> str | None:
    """How the fleet names a GPU's PCIe link: "PCIe gen5 x16" (its maximum), None unknown."""
    if not pcie.gen_max or not pcie.width_max:
        return None
    return f"PCIe gen{pcie.gen_max} x{pcie.width_max}"


def pcie_downtrained(pcie: PcieLink) -> bool:
    """The link trained below its maximum width or generation."""
    return bool((pcie.width_current and pcie.width_max and pcie.width_current < pcie.width_max)
                or (pcie.gen_current and pcie.gen_max and pcie.gen_current < pcie.gen_max))


def gpu_group(model: str, pcie: PcieLink, driver: str) -> GroupKey | None:
    """The peer group of a GPU's own tests; none for an unknown or downtrained link (a slow
    copy there is PCIeLinkDowntrained's and PCIeBandwidthDegraded's business, and its figures
    would drag its group's median)."""
    link = pcie_class(pcie)
    if link is None or pcie_downtrained(pcie):
        return None
    return GroupKey(model, link, driver)


def pair_model(src_model: str, dst_model: str) -> str:
    return src_model if src_model == dst_model else f"{src_model} + {dst_model}"


def pair_group(models: tuple[str, str], topology: str, via_nvswitch: bool, driver: str,
               downtrained_end: bool) -> GroupKey | None:
    """The peer group of a pair; none for a PCIe pair with an end whose link trained below
    its maximum (its slowness is PCIeLinkDowntrained's, like the GPU's own copies)."""
    if downtrained_end and not topology.startswith("NV"):
        return None
    return GroupKey(pair_model(*models), topology_class(topology, via_nvswitch), driver)


def _percentile(ordered: Sequence[float], pct: float) -> float:
    """Linear interpolation between closest ranks (numpy's default), `ordered` ascending."""
    pos = (len(ordered) - 1) * pct / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def distribution(test: TestName, members: Sequence[tuple[int, float]],
                 low_percentile: float) -> Distribution:
    """`members`: (host id, value) of every pair in the group; at least one."""
    values = sorted(v for _, v in members)
    worse_side = 100.0 - low_percentile if unit_of(test) is Unit.SECONDS else low_percentile
    return Distribution(median=statistics.median(values),
                        low=_percentile(values, worse_side),
                        hosts=len({h for h, _ in members}), pairs=len(values))


def peer_check(src: int, dst: int, test: TestName, value: float, baseline: float | None,
               group: GroupKey, dist: Distribution, floor: float,
               min_hosts: int) -> PeerCheck:
    """The better of the newest value and the pair's own baseline, against the median: a
    pair is flagged only when both are low (a single slow sample is the baseline rule's
    business; a baseline that absorbed a slow host is not an excuse)."""
    best = value
    if baseline is not None and ratio(test, baseline, dist.median) > ratio(test, value,
                                                                           dist.median):
        best = baseline
    r = ratio(test, best, dist.median)
    return PeerCheck(src, dst, test, group, best, dist.median, dist.hosts, r,
                     flagged=dist.hosts >= min_hosts and r < floor)


def _flag_pair(pair: PairJudgement, worst: PeerCheck) -> PairJudgement:
    head = f"GPU{pair.src}->GPU{pair.dst} is {worst.text}"
    if pair.verdict in (Verdict.DEGRADED, Verdict.DOWN):
        return replace(pair, reason=f"{pair.reason}; also {head}")
    return replace(pair, verdict=Verdict.DEGRADED, reason=head)


def worst_checks(checks: Iterable[PeerCheck]) -> dict[tuple[int, int], PeerCheck]:
    """The lowest-ratio check of each pair (eligible groups only)."""
    out: dict[tuple[int, int], PeerCheck] = {}
    for c in checks:
        if c.hosts and ((c.src, c.dst) not in out or c.ratio < out[(c.src, c.dst)].ratio):
            out[(c.src, c.dst)] = c
    return out


def flag_pairs(pairs: Sequence[PairJudgement], checks: Sequence[PeerCheck], floor: float,
               min_hosts: int) -> tuple[list[PairJudgement], HostPeers]:
    """Pairs with a test below its peers made degraded (reason says by how much), and the
    host's median ratio over its checks in groups of at least `min_hosts` hosts."""
    eligible = [c for c in checks if c.hosts >= min_hosts]
    worst = worst_checks(c for c in eligible if c.flagged)
    out = [_flag_pair(p, worst[(p.src, p.dst)]) if (p.src, p.dst) in worst else p
           for p in pairs]
    return out, host_peers(eligible, worst, floor)


def host_peers(checks: Sequence[PeerCheck], worst: Mapping[tuple[int, int], PeerCheck],
               floor: float) -> HostPeers:
    """The host's median ratio over its eligible pair checks (its fabric: a GPU's own copies
    are a PCIe matter, flagged per GPU), and what is below the floor."""
    eligible = [c for c in checks if c.src != c.dst]
    host_ratio = statistics.median(c.ratio for c in eligible) if eligible else None
    flagged = [c for c in eligible if c.flagged]
    groups = Counter(c.group for c in flagged)
    return HostPeers(host_ratio, len(eligible), len(flagged),
                     below=host_ratio is not None and host_ratio < floor,
                     group=min(groups, key=lambda g: (-groups[g], g)) if groups else None,
                     pairs_below=sum(1 for s, d in worst if s != d),
                     gpus_below=tuple(sorted({g for key in worst for g in key})))


def flag_gpus(gpus: Sequence[GpuJudgement], checks: Sequence[PeerCheck],
              min_hosts: int) -> list[GpuJudgement]:
    """GPUs with an own test (keyed (gpu, gpu)) below its peers made degraded, the reason
    carrying the figures."""
    worst = worst_checks(c for c in checks if c.flagged and c.hosts >= min_hosts
                         and c.src == c.dst)
    out = []
    for g in gpus:
        check = worst.get((g.gpu, g.gpu))
        if check is None:
            out.append(g)
        elif g.verdict in (Verdict.DEGRADED, Verdict.DOWN):
            out.append(replace(g, reason=f"{g.reason}; also GPU{g.gpu} is {check.text}"))
        else:
            out.append(replace(g, verdict=Verdict.DEGRADED,
                               reason=f"GPU{g.gpu} is {check.text}"))
    return out


def sibling_gaps(stats: Mapping[tuple[GroupKey, TestName], Distribution], floor: float,
                 min_hosts: int) -> list[SiblingGap]:
    """Every eligible group against the best eligible sibling under another driver."""
    families: dict[tuple[str, str, TestName], list[tuple[GroupKey, Distribution]]] = {}
    for (group, test), dist in stats.items():
        if dist.hosts >= min_hosts:
            families.setdefault((group.gpu_model, group.topology, test), []).append(
                (group, dist))
    gaps = []
    for (_, _, test), members in sorted(families.items(), key=lambda kv: str(kv[0])):
        if len(members) < 2:
            continue
        ref, ref_dist = max(members, key=lambda m: ratio(test, m[1].median, 1.0))
        for group, dist in sorted(members, key=lambda m: m[0]):
            if group == ref:
                continue
            r = ratio(test, dist.median, ref_dist.median)
            gaps.append(SiblingGap(group, ref, test, r, flagged=r < floor))
    return gaps
