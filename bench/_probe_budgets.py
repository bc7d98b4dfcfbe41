"""Tuning aid (not run by `make bench`): accuracy against cost for candidate budgets on GPU 0->1.

For each test it runs several (MiB per copy, copies, samples, warm-up) candidates three times
and prints the value, its ratio to the reference, GPU ms and MiB, so the sweep's default
budget table can be chosen from evidence. It also calibrates what NVLink TX counters see for
each test against the test's own `wire_bytes`, and times one counter read.

    python -m bench._probe_budgets
"""

from __future__ import annotations

import json
import time
from dataclasses import replace

from bench.probe_accuracy import MEASURED, MiB, nccl_reference, shown, targets
from probes import transfers
from probes.errors import FabricUnavailable
from probes.fabric import TestSpec
from probes.report import TestName

T = TestName
CANDIDATES: dict[TestName, list[tuple[int, int, int, int]]] = {
    T.CE_WRITE: [(64, 4, 3, 1), (64, 8, 3, 1), (128, 3, 3, 1), (128, 4, 2, 1), (256, 2, 2, 1),
                 (256, 4, 3, 1), (512, 8, 3, 1)],
    T.CE_READ: [(64, 4, 3, 1), (128, 3, 3, 1), (256, 2, 2, 1)],
    T.CE_BIDIR: [(64, 4, 3, 1), (128, 3, 3, 1), (256, 2, 2, 1), (512, 4, 3, 1)],
    T.SM_WRITE: [(64, 4, 3, 1), (128, 3, 3, 1), (256, 2, 2, 1), (512, 4, 3, 1)],
    T.SM_READ: [(64, 4, 3, 1), (128, 3, 3, 1), (256, 2, 2, 1), (512, 4, 3, 1)],
    T.LATENCY: [(2, 500, 3, 100), (2, 1000, 3, 200), (2, 2000, 3, 200)],
    T.STAGED: [(16, 2, 3, 1), (32, 1, 3, 1), (64, 1, 3, 1)],
    T.ALLREDUCE: [(16, 4, 3, 1), (64, 4, 3, 1), (128, 2, 3, 1)],
}
PROPOSED = {
    T.CE_WRITE: (128, 3, 3, 1), T.CE_READ: (128, 3, 3, 1), T.CE_BIDIR: (128, 3, 3, 1),
    T.SM_WRITE: (128, 3, 3, 1), T.SM_READ: (128, 3, 3, 1), T.LATENCY: (2, 1000, 3, 200),
    T.STAGED: (32, 1, 3, 1), T.ALLREDUCE: (64, 3, 3, 1),
}
PROPOSED_BUDGETS = {
    t: TestSpec(t, bytes_per_copy=mib * MiB, copies=c, samples=s, warmup=w)
    for t, (mib, c, s, w) in PROPOSED.items()
}


def spec(test: TestName, mib: int, copies: int, samples: int, warmup: int) -> TestSpec:
    pair = {"gpus": (0, 1)} if test is T.ALLREDUCE else {"src": 0, "dst": 1}
    return TestSpec(test, bytes_per_copy=mib * MiB, copies=copies, samples=samples,
                    warmup=warmup, **pair)


def tx(fabric, gpu: int) -> int:
    return sum(c.tx_bytes or 0 for c in fabric.link_counters(gpu))


def scan(fabric, measured: dict) -> None:
    goals = targets(measured)
    for test, cands in CANDIDATES.items():
        for cand in cands:
            s = spec(test, *cand)
            ref = (nccl_reference(measured, s.bytes_per_copy) if test is T.ALLREDUCE
                   else goals[test].reference)
            runs = [fabric.measure(s) for _ in range(3)]
            vals = " ".join(f"{shown(test, m):7.1f}" for m in runs)
            ratios = " ".join(f"{shown(test, m) / ref:.3f}" for m in runs)
            ms = max(m.gpu_time_s for m in runs) * 1e3
            mem = max(m.device_memory_bytes for m in runs) / MiB
            ver = all(m.verified for m in runs)
            print(f"{test.value:10} {cand!s:18} {vals}  ratios {ratios}  {ms:6.2f} ms "
                  f"{mem:5.0f} MiB verified={ver}")


def staged_chunks(fabric, measured: dict) -> None:
    ref = targets(measured)[T.STAGED].reference
    for chunk_mib in (2, 4, 8, 16):
        for slots in (2, 4):
            transfers.STAGED_CHUNK_BYTES, transfers.STAGED_SLOTS = chunk_mib * MiB, slots
            vals = [fabric.measure(spec(T.STAGED, 32, 1, 3, 1)).value / 1e9 for _ in range(3)]
            print(f"staged chunk {chunk_mib} MiB x {slots} slots: "
                  + " ".join(f"{v:.1f} ({v / ref:.2f})" for v in vals))
    transfers.STAGED_CHUNK_BYTES, transfers.STAGED_SLOTS = 8 * MiB, 4


def counters(fabric) -> None:
    t0 = time.perf_counter()
    for _ in range(5):
        fabric.link_counters(0)
    print(f"link_counters(gpu) takes {(time.perf_counter() - t0) / 5 * 1e3:.1f} ms")
    for test, budget in PROPOSED_BUDGETS.items():
        s = replace(budget, gpus=(0, 1)) if test is T.ALLREDUCE else replace(budget, src=0, dst=1)
        before = (tx(fabric, 0), tx(fabric, 1))
        m = fabric.measure(s)
        after = (tx(fabric, 0), tx(fabric, 1))
        seen = [a - b for a, b in zip(after, before, strict=True)]
        print(f"{test.value:10} TX seen gpu0 {seen[0] / MiB:9.2f} MiB gpu1 {seen[1] / MiB:9.2f} MiB"
              f"  wire_bytes {({g: round(v / MiB, 2) for g, v in m.wire_bytes.items()})}")


def main() -> int:
    try:
        from probes.real import RealFabric

        fabric = RealFabric()
        fabric.transfers()
    except FabricUnavailable as exc:
        print(f"skipped: no GPU here ({exc})")
        return 0
    measured = json.loads(MEASURED.read_text())
    try:
        counters(fabric)
        scan(fabric, measured)
        staged_chunks(fabric, measured)
    finally:
        fabric.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
