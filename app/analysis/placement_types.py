"""The values placement takes and gives: see `app/analysis/placement.py` for the models."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from peerwatch.probes.report import TestName
from peerwatch.probes.test_kinds import Expect, kind_of

Pair = tuple[int, int]


class Pattern(StrEnum):
    RING = "ring"
    ALL_TO_ALL = "all_to_all"


class LinkKind(StrEnum):
    NVLINK = "nvlink"  # NVLinks wired straight between the two GPUs
    NVSWITCH = "nvswitch"  # through the NVSwitch fabric: all peers share the GPU's links
    PCIE = "pcie"  # no NVLink: PCIe, possibly across sockets


def ring_ratio(kind: LinkKind | None) -> float:
    """All-reduce bus bandwidth over CE copy rate on a link of this kind (unknown: PCIe's)."""
    nvlink = kind in (LinkKind.NVLINK, LinkKind.NVSWITCH)

    def efficiency(rule: Expect) -> float:
        eff = rule.nvlink if nvlink else rule.pcie
        assert eff is not None, "allreduce and ce_write declare both efficiencies"
        return eff

    return (efficiency(kind_of(TestName.ALLREDUCE).expect)
            / efficiency(kind_of(TestName.CE_WRITE).expect))


MODELS = {
    Pattern.RING: "ring all-reduce bus bandwidth = slowest link of the best ring order (slower "
    "direction) x all-reduce/CE efficiency (NVLink 0.69/0.83, PCIe 0.60/0.80)",
    Pattern.ALL_TO_ALL: "per-GPU all-to-all bandwidth = min((k-1) x slowest pair, each GPU's "
    "egress and ingress; direct NVLinks add up, NVSwitch and PCIe ports are shared)",
}


class PlacementError(ValueError):
    """The question cannot be answered as asked (bad k or pattern, too few healthy GPUs)."""


class NotEnoughHealthyGpus(PlacementError):
    """Fewer healthy GPUs than asked for; carries the numbers for the API's error body."""

    def __init__(self, requested: int, healthy: Sequence[int], total: int) -> None:
        self.requested, self.healthy, self.total = requested, list(healthy), total
        names = ", ".join(f"GPU{g}" for g in self.healthy) or "none"
        super().__init__(
            f"asked for {requested} GPUs but only {len(self.healthy)} of {total} are healthy "
            f"({names})"
        )


class GpusKeptApart(NotEnoughHealthyGpus):
    """Enough healthy GPUs, but pair faults keep some apart: fewer may share one job."""

    def __init__(self, requested: int, healthy: Sequence[int], total: int,
                 apart: Sequence[Pair], largest: Sequence[int]) -> None:
        super().__init__(requested, healthy, total)
        self.apart, self.largest = list(apart), list(largest)
        pairs = ", ".join(f"GPU{a} and GPU{b}" for a, b in self.apart)
        self.args = (f"asked for {requested} GPUs: {len(self.healthy)} of {total} are healthy "
                     f"but {pairs} must not share a job (a pair fault between them), so at "
                     f"most {len(self.largest)} can "
                     f"({', '.join(f'GPU{g}' for g in self.largest)})",)


@dataclass(frozen=True)
class GpuState:
    """One GPU as placement sees it. `locality`: NUMA node or CPU affinity (same = one socket)."""

    index: int
    healthy: bool
    reason: str = ""  # why it is not healthy (from the health verdict)
    locality: str | None = None
    uuid: str | None = None


@dataclass(frozen=True)
class PairVerdict:
    verdict: str  # healthy | degraded | down | unknown
    reason: str = ""


@dataclass(frozen=True)
class FabricView:
    """What placement knows about one host. Pair maps are keyed (src, dst), values bytes/s."""

    gpus: Sequence[GpuState]
    measured: Mapping[Pair, float]
    expected: Mapping[Pair, float] = field(default_factory=dict)
    kinds: Mapping[Pair, LinkKind] = field(default_factory=dict)
    pair_verdicts: Mapping[Pair, PairVerdict] = field(default_factory=dict)
    apart: Sequence[Pair] = ()  # pair faults: GPUs that must not share a job (pair_faults.py)
    # The host's measured all-to-all: each GPU's newest judged figure (bytes/s it sent its
    # peers, every GPU of the run sending at once; 0 where its newest run failed) and the
    # test it comes from; empty where none was measured (placement_measured.py).
    all_to_all: Mapping[int, float] = field(default_factory=dict)
    all_to_all_test: str | None = None


@dataclass(frozen=True)
class CandidateSet:
    gpus: tuple[int, ...]  # ring order for ring, index order for all_to_all
    predicted_bps: float | None  # None for a single GPU: nothing to communicate
    weakest_pair: Pair | None
    estimated_pairs: tuple[Pair, ...] = ()


@dataclass(frozen=True)
class Exclusion:
    gpu: int
    healthy: bool
    reason: str


@dataclass(frozen=True)
class Placement:
    pattern: Pattern
    k: int
    gpus: tuple[int, ...]
    predicted_bps: float | None
    cuda_visible_devices: str
    cuda_visible_devices_uuid: str | None  # GPU UUIDs: immune to CUDA's device ordering
    weakest_pair: Pair | None
    estimated_pairs: tuple[Pair, ...]
    model: str
    exact: bool  # every candidate set and ring order was tried
    runner_ups: tuple[CandidateSet, ...]
    excluded: tuple[Exclusion, ...]
    warnings: tuple[str, ...] = ()
    source: str = "predicted"  # predicted_bps: "measured" (all_to_all run) or "predicted"
