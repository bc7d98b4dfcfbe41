"""The fabric seam: one Protocol describing a GPU host's peer-to-peer fabric.

Two implementations answer it: the real one (`probes/nvidia/nvml.py` for NVML,
`probes/nvidia/transfers.py` for CuPy transfer tests, joined in `probes/nvidia/real.py`) and
the simulated one (`probes/sim/simulated.py`, built from a topology preset). Everything above this
seam — the sweep, the worker, the server — runs unchanged on either, which is what lets every
CPU test and the demo exercise the whole product without a GPU.

Queries are per GPU or per pair so that the caller can isolate failures item by item (the
node_exporter habit: one failing collector never stops the others). A backend raises
`probes.errors.NotSupported` for a query the device does not offer; the caller records the
value as absent. Any other `PeerwatchProbeError` marks that one item failed.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from peerwatch.probes.report import (
    GpuActivity,
    GpuInfo,
    HostIdentity,
    LinkCounters,
    NvLinkPort,
    PairInfo,
    TestName,
    test_scope,
)
from peerwatch.probes.test_kinds import kind_of


@dataclass(frozen=True)
class TestSpec:
    """One transfer test to run: what, between which GPUs, and how much it may cost.

    Data flows src -> dst for every pair test (see `TestName`). `gpus` is used by allreduce
    and by a joint per-GPU test (all-to-all: one run over `gpus`, one figure per GPU);
    another per-GPU test (`GPU_TESTS`: h2d, d2h, local) names its GPU as `src`, `dst` None.
    `bytes_per_copy * copies * samples` bounds the traffic; warm-up copies come on top.
    """

    __test__ = False  # not a pytest class

    test: TestName
    src: int | None = None
    dst: int | None = None
    gpus: tuple[int, ...] = ()
    bytes_per_copy: int = 64 << 20
    copies: int = 8
    samples: int = 3
    warmup: int = 1

    @property
    def joint(self) -> bool:
        """One run over `gpus` giving one result per GPU (`TestKind.joint`)."""
        return kind_of(self.test).joint

    def label(self) -> str:
        if test_scope(self.test) == "set" or self.joint:
            return f"{self.test} gpus={','.join(map(str, self.gpus))}"
        if self.dst is None:
            return f"{self.test} GPU{self.src}"
        return f"{self.test} GPU{self.src}->GPU{self.dst}"


@dataclass
class Measurement:
    """What a backend measured for one `TestSpec`, before the sweep judges contention.

    samples: one value per timed sample, in base units (bytes/s, or seconds for latency).
    gpu_time_s: GPU time the whole test used (warm-up and verification included).
    device_memory_bytes: peak device memory the test held on any one GPU.
    wire_bytes: bytes the test itself sent out of each GPU over its links during the whole
        test (warm-up included); the sweep subtracts them from the NVLink TX counter deltas
        to find the bytes that were someone else's.
    per_gpu: for a joint test (all-to-all), each GPU's own samples; the sweep makes one
        result of each. `samples` then holds the slowest GPU's.
    """

    samples: list[float]
    gpu_time_s: float
    device_memory_bytes: int
    verified: bool
    wire_bytes: dict[int, int] = field(default_factory=dict)
    per_gpu: dict[int, list[float]] = field(default_factory=dict)

    @property
    def value(self) -> float:
        return statistics.median(self.samples)


@runtime_checkable
class Fabric(Protocol):
    """A GPU host's fabric: inventory, counters and transfer tests."""

    name: str  # "nvml" or "simulated:<preset>"

    def host(self) -> HostIdentity: ...

    def gpu_count(self) -> int: ...

    def gpu(self, index: int) -> GpuInfo: ...

    def nvlinks(self, gpu: int) -> list[NvLinkPort]: ...

    def link_counters(self, gpu: int) -> list[LinkCounters]: ...

    def pcie_replay(self, gpu: int) -> int: ...

    def activity(self, gpu: int) -> GpuActivity: ...

    def pair(self, src: int, dst: int) -> PairInfo: ...

    def measure(self, spec: TestSpec) -> Measurement: ...

    def close(self) -> None: ...
