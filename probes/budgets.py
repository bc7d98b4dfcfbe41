"""How much each transfer test may cost: the default budgets, each kind's `budget` row.

Chosen so one (pair, test) on an H200 NVSwitch pair stays under 5 ms of GPU time and 512 MiB
of device memory per GPU while reaching the probe's accuracy targets. Tuned on the lent
2 x H200 pair with bench/gpu/_probe_budgets.py (ratios to nvbandwidth v0.8 on the same machine;
see docs/gpu-backend.md): a copy engine reaches 0.98 of nvbandwidth with 64 MiB copies,
0.99 with 256 MiB; pulls (ce_read) ramp slower (64 MiB: 0.93, 256 MiB: 0.985).
Warm-up is counted in the same unit as `copies` and comes on top of `copies * samples`.

    test        buffer    copies  samples  warm-up  H200 pair: ratio, GPU time, MiB per GPU
    ce_write    256 MiB   2       2        1        0.993   3.6 ms   256
    ce_read     256 MiB   2       2        1        0.985   3.7 ms   256
    ce_bidir    192 MiB   2       3        1        0.99    3.9 ms   384 (both directions)
    sm_*        128 MiB   3       3        1        0.98    3.8 ms   128
    latency     2 MiB     1000    3        100      1.03    2.8 ms   2
    staged      16 MiB    2       3        1        0.96-1.12 3.2 ms 16 (varies by machine)
    allreduce   64 MiB    4       3        1        0.97    3.4 ms   128 + NCCL's 484
    h2d, d2h    8 MiB     2       3        1        0.98    1.1 ms   8 (+ 8 pinned on the host)
    local       192 MiB   3       3        1        0.98    1.2 ms   384
    a2a_ce      32 MiB    2       3        1        -       4.6 ms*  448 on 8 GPUs (2 x 7 x 32)
    a2a_nccl    16 MiB    4       3        1        -       4.6 ms*  224 on 8 GPUs + NCCL's

a2a_* (all-to-all, one run over every GPU: `bytes_per_copy` is one flow's buffer, per peer)
have not run on a multi-GPU host yet: * is the simulated hgx8's GPU time for the whole run,
shared among its per-GPU results (bench/gpu/all_to_all.py measures it on hardware).

h2d, d2h and local run on every GPU (one H200, PCIe Gen5 x16, bench/gpu/pcie.py: ratios to
nvbandwidth's method reimplemented in the same run; 3.4 ms for the three together). Host
copies reach 0.98 at 8 MiB and 0.99 at 16 MiB for twice the time; a local copy needs buffers
well beyond the 50 MB L2 (16 MiB reads 2320 GB/s from cache) and is noisy below 128 MiB.

For `latency`, `bytes_per_copy` is the pointer-chase buffer and `copies` the dependent loads
per sample; for `allreduce`, `copies` are all-reduce iterations per sample. PCIe pairs move
the same bytes at a tenth of the speed, so they cost about ten times the GPU time.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from peerwatch.probes.fabric import TestSpec
from peerwatch.probes.report import TestName, declared_tests
from peerwatch.probes.test_kinds import kind_of, kinds


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


class _TableBudgets(Mapping[TestName, Budget]):
    """Each kind's `budget` row of `probes/test_kinds.py`, read at lookup time so a kind
    declared at run time has its budget too."""

    def __getitem__(self, test: TestName) -> Budget:
        c = kind_of(test).budget
        return Budget(c.bytes_per_copy, c.copies, c.samples, c.warmup)

    def __iter__(self) -> Iterator[TestName]:
        return iter(declared_tests())

    def __len__(self) -> int:
        return len(kinds())


DEFAULT_BUDGETS: Mapping[TestName, Budget] = _TableBudgets()
