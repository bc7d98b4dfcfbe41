"""How much each transfer test may cost: the one table of default budgets.

Chosen so one (pair, test) on an H200 NVSwitch pair stays under 5 ms of GPU time and 512 MiB
of device memory per GPU while still reaching the accuracy targets of issue 2 (CuPy on the
H200 pair: 64 MiB copies reach 388 GB/s, 98% of the 1 GiB figure; 64 MiB x 8 took 1.45 ms).
Warm-up is counted in the same unit as `copies` and comes on top of `copies * samples`.

    test       buffer    copies   samples  warm-up   H200 pair: GPU time
    ce_*       64 MiB    8        3        1         25 copies / 388 GB/s   ~4.3 ms
    sm_*       64 MiB    4        3        1         13 copies / 370 GB/s   ~2.4 ms
    latency    2 MiB     1000     3        100       3100 loads x 830 ns    ~2.6 ms
    staged     16 MiB    2        3        1         7 copies / 37.7 GB/s   ~3.1 ms
    allreduce  64 MiB    4        3        1         13 x 64 MiB / 270 GB/s ~3.2 ms (2 GPUs)

For `latency`, `bytes_per_copy` is the pointer-chase buffer and `copies` the dependent loads
per sample; for `allreduce`, `copies` are all-reduce iterations per sample. PCIe pairs move
the same bytes at a tenth of the speed, so they cost about ten times the GPU time.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

from probes.fabric import TestSpec
from probes.report import TestName

MiB = 1 << 20


@dataclass(frozen=True)
class Budget:
    bytes_per_copy: int
    copies: int
    samples: int = 3
    warmup: int = 1

    def __post_init__(self) -> None:
        if self.bytes_per_copy <= 0 or self.copies < 1 or self.samples < 1 or self.warmup < 0:
            raise ValueError(f"a budget needs positive sizes and counts, got {self}")

    def spec(self, test: TestName, src: int | None = None, dst: int | None = None,
             gpus: tuple[int, ...] = ()) -> TestSpec:
        return TestSpec(test=test, src=src, dst=dst, gpus=gpus,
                        bytes_per_copy=self.bytes_per_copy, copies=self.copies,
                        samples=self.samples, warmup=self.warmup)


_CE = Budget(64 * MiB, copies=8)
_SM = Budget(64 * MiB, copies=4)

DEFAULT_BUDGETS = MappingProxyType({
    TestName.CE_WRITE: _CE,
    TestName.CE_READ: _CE,
    TestName.CE_BIDIR: _CE,
    TestName.SM_WRITE: _SM,
    TestName.SM_READ: _SM,
    TestName.LATENCY: Budget(2 * MiB, copies=1000, warmup=100),
    TestName.STAGED: Budget(16 * MiB, copies=2),
    TestName.ALLREDUCE: Budget(64 * MiB, copies=4),
})
