"""Tuning aid (not run by `make bench`): accuracy against cost for candidate budgets on GPU 0->1.

For each test it runs several (MiB per copy, copies, samples, warm-up) candidates three times
and prints the value, its ratio to the reference, GPU ms and MiB, so the sweep's default
budget table can be chosen from evidence. It also calibrates what NVLink TX counters see for
each test against the test's own `wire_bytes`, and times one counter read.

    python -m bench.gpu._probe_budgets
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from bench.helpers.gpu import real_fabric_or_skip
from bench.probe_accuracy import MEASURED, MiB, nccl_reference, shown, targets
from peerwatch.probes.budgets import DEFAULT_BUDGETS
from peerwatch.probes.fabric import TestSpec
from peerwatch.probes.report import TestName

T = TestName
CANDIDATES: dict[TestName, list[tuple[int, int, int, int]]] = {
    T.CE_WRITE: [(256, 1, 4, 1), (256, 2, 2, 1), (192, 2, 3, 1)],
    T.CE_READ: [(256, 1, 4, 1), (256, 2, 2, 1), (192, 2, 3, 1)],
    T.CE_BIDIR: [(192, 2, 3, 1), (224, 2, 2, 1), (240, 1, 4, 1)],
    T.SM_WRITE: [(128, 3, 3, 1), (256, 1, 4, 1)],
    T.SM_READ: [(128, 3, 3, 1), (256, 1, 4, 1)],
    T.STAGED: [(16, 2, 3, 1)],
    T.ALLREDUCE: [(128, 2, 3, 1)],
}
# Seen on the H200 pair (NCCL 2.28.3): BUFFSIZE 1-2 MiB saves only 48 MiB; 16 channels cost
# 13% of bus bandwidth, 8 channels 43%.
NCCL_VARIANTS: list[dict[str, str]] = [
    {}, {"NCCL_PROTO": "Simple"}, {"NCCL_PROTO": "Simple", "NCCL_BUFFSIZE": "2097152"},
    {"NCCL_PROTO": "^LL128"}, {"NCCL_MAX_NCHANNELS": "24"},
]


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


def counter_costs(fabric) -> None:
    """Where link_counters' time goes: field-value calls of several sizes, error counters."""
    nv = fabric._nvml
    m, h = nv.module, nv.handle(0)
    tx, rx = m.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, m.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX
    err = [m.NVML_FI_DEV_NVLINK_ERROR_DL_REPLAY, m.NVML_FI_DEV_NVLINK_ERROR_DL_RECOVERY,
           m.NVML_FI_DEV_NVLINK_ERROR_DL_CRC]
    cases = {
        "1 field (link count)": lambda: nv.fields(0, [(m.NVML_FI_DEV_NVLINK_LINK_COUNT, 0)]),
        "18 fields (TX)": lambda: nv.fields(0, [(tx, link) for link in range(18)]),
        "36 fields (TX+RX)": lambda: nv.fields(0, [(f, link) for link in range(18)
                                                    for f in (tx, rx)]),
        "54 fields (DL errors)": lambda: nv.fields(0, [(f, link) for link in range(18)
                                                        for f in err]),
        "36 error-counter calls": lambda: [m.nvmlDeviceGetNvLinkErrorCounter(h, link, c)
                                           for link in range(18) for c in (3, 4)],
        "link_counters(0)": lambda: fabric.link_counters(0),
    }
    for name, fn in cases.items():
        t0 = time.perf_counter()
        for _ in range(3):
            fn()
        print(f"counters: {name:24} {(time.perf_counter() - t0) / 3 * 1e3:7.2f} ms")


def nccl_variant() -> int:
    """In a fresh process (NCCL reads its environment once): NCCL's held memory and busbw."""
    from peerwatch.probes.nvidia.transfers import Transfers

    tr = Transfers()
    env = {k: v for k, v in os.environ.items() if k.startswith("NCCL_") and k != "NCCL_NVLS_ENABLE"}
    env.pop("NCCL_VERSION", None)
    for mib, copies in ((64, 4), (128, 2)):
        runs = [tr.measure(spec(T.ALLREDUCE, mib, copies, 3, 1)) for _ in range(2)]
        comm = max(r.device_memory_bytes for r in runs) - 2 * mib * MiB
        print(f"nccl {env or 'defaults'} {mib} MiB: busbw "
              + " ".join(f"{r.value / 1e9:.1f}" for r in runs)
              + f" GB/s, NCCL buffers {comm / MiB:.0f} MiB/GPU (+ kernels resident "
              f"{(tr.nccl_resident_bytes or 0) / MiB:.0f} MiB), "
              f"gpu {max(r.gpu_time_s for r in runs) * 1e3:.2f} ms", flush=True)
    return 0


def nccl_variants() -> None:
    for variant in NCCL_VARIANTS:
        env = {**os.environ, **variant}
        t0 = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "bench.gpu._probe_budgets", "--nccl"], env=env,
                              capture_output=True, text=True, timeout=120)
        print((done.stdout + done.stderr[-500:]).strip(), f"({time.perf_counter() - t0:.1f} s)")


def counters(fabric) -> None:
    t0 = time.perf_counter()
    for _ in range(5):
        fabric.link_counters(0)
    print(f"link_counters(gpu) takes {(time.perf_counter() - t0) / 5 * 1e3:.1f} ms")
    for test, budget in DEFAULT_BUDGETS.items():
        s = budget.spec(test, gpus=(0, 1)) if test is T.ALLREDUCE else budget.spec(test, 0, 1)
        before = (tx(fabric, 0), tx(fabric, 1))
        m = fabric.measure(s)
        after = (tx(fabric, 0), tx(fabric, 1))
        seen = [a - b for a, b in zip(after, before, strict=True)]
        print(f"{test.value:10} TX seen gpu0 {seen[0] / MiB:9.2f} MiB gpu1 {seen[1] / MiB:9.2f} MiB"
              f"  wire_bytes {({g: round(v / MiB, 2) for g, v in m.wire_bytes.items()})}")


def main(argv: list[str] | None = None) -> int:
    """`--nccl`: one NCCL variant (internal); `--only counters,scan,nccl`: a subset."""
    args = sys.argv[1:] if argv is None else argv
    if args == ["--nccl"]:
        return nccl_variant()
    parts = set(args[1].split(",")) if args[:1] == ["--only"] else {"counters", "scan", "nccl"}
    fabric = real_fabric_or_skip()
    if fabric is None:
        return 0
    measured = json.loads(MEASURED.read_text())
    try:
        if "counters" in parts:
            counter_costs(fabric)
            counters(fabric)
        if "scan" in parts:
            scan(fabric, measured)
    finally:
        fabric.close()
    if "nccl" in parts:
        nccl_variants()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
