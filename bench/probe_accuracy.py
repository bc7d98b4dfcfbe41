"""Accuracy and cost of the real probe against NVIDIA's own tools on the same machine.

Runs every pair test over every ordered GPU pair, and the NCCL all-reduce over all GPUs, with
the sweep's default budgets (probes/budgets.py), and prints each figure as a ratio against
tests/fixtures/h200x2/measured.json (nvbandwidth v0.8, p2pBandwidthLatencyTest, nccl through
CuPy, measured on the lent 2 x H200 machine), with each test's GPU time and device memory
against the probe's cost bounds (5 ms, 512 MiB per GPU). Without a GPU it says so and returns 0.

    python -m bench.probe_accuracy            # exit status 1 when a figure misses its target
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from bench.helpers.gpu import real_fabric_or_skip
from peerwatch.probes.budgets import DEFAULT_BUDGETS, Budget
from peerwatch.probes.errors import PeerwatchProbeError
from peerwatch.probes.fabric import Measurement, TestSpec
from peerwatch.probes.report import PAIR_TESTS, TestName

MEASURED = Path(__file__).resolve().parents[1] / "tests/fixtures/h200x2/measured.json"
MiB = 1 << 20
MAX_GPU_S = 5e-3
MAX_MEMORY = 512 * MiB


@dataclass(frozen=True)
class Target:
    reference: float  # GB/s, or ns for latency
    source: str
    low: float  # ratio measured/reference must be >= low ...
    high: float = math.inf  # ... and <= high


def targets(measured: dict) -> dict[TestName, Target]:
    nvb, p2p = measured["nvbandwidth_v0.8"], measured["p2pBandwidthLatencyTest"]
    return {
        TestName.CE_WRITE: Target(nvb["device_to_device_memcpy_write_ce"], "nvbandwidth", 0.97),
        TestName.CE_READ: Target(nvb["device_to_device_memcpy_read_ce"], "nvbandwidth", 0.97),
        TestName.CE_BIDIR: Target(nvb["device_to_device_bidirectional_memcpy_read_ce_total"],
                                  "nvbandwidth", 0.97),
        TestName.SM_WRITE: Target(nvb["device_to_device_memcpy_write_sm"], "nvbandwidth", 0.95),
        TestName.SM_READ: Target(nvb["device_to_device_memcpy_read_sm"], "nvbandwidth", 0.95),
        TestName.LATENCY: Target(nvb["device_to_device_latency_sm_ns"], "nvbandwidth",
                                 0.85, 1.15),
        TestName.STAGED: Target(p2p["uni_p2p_disabled_GBps"], "p2pBandwidthLatencyTest",
                                0.80, 1.20),
    }


def nccl_reference(measured: dict, nbytes: int) -> float:
    """NCCL bus bandwidth at `nbytes`, interpolated on log(size) between measured sizes."""
    table = sorted((int(k), v) for k, v in measured["nccl_allreduce_busbw_GBps_by_bytes"].items()
                   if k.isdigit())
    if nbytes <= table[0][0]:
        return table[0][1]
    for (s0, v0), (s1, v1) in zip(table, table[1:], strict=False):
        if nbytes <= s1:
            f = (math.log(nbytes) - math.log(s0)) / (math.log(s1) - math.log(s0))
            return v0 + f * (v1 - v0)
    return table[-1][1]




def shown(test: TestName, m: Measurement) -> float:
    return m.value * 1e9 if test is TestName.LATENCY else m.value / 1e9


def run(fabric, budgets: Mapping[TestName, Budget]) -> tuple[list[tuple], float, float]:
    rows: list[tuple] = []
    gpus = list(range(fabric.gpu_count()))
    start = time.perf_counter()
    for src in gpus:
        for dst in gpus:
            if src == dst:
                continue
            for test in PAIR_TESTS:
                rows.append((f"{src}->{dst}", test, _one(fabric, budgets[test].spec(test, src,
                                                                                    dst))))
    spec = budgets[TestName.ALLREDUCE].spec(TestName.ALLREDUCE, gpus=tuple(gpus))
    rows.append(("all", TestName.ALLREDUCE, _one(fabric, spec)))
    wall = time.perf_counter() - start
    gpu = sum(m.gpu_time_s for _, _, m in rows if isinstance(m, Measurement))
    return rows, gpu, wall


def _one(fabric, spec: TestSpec) -> Measurement | str:
    try:
        return fabric.measure(spec)
    except PeerwatchProbeError as exc:
        return f"{type(exc).__name__}: {exc}"


def report(rows: list[tuple], budgets: Mapping[TestName, Budget], measured: dict) -> bool:
    goals = targets(measured)
    ok_all = True
    notes: list[str] = []
    print(f"{'pair':6} {'test':10} {'measured':>10} {'reference':>10} {'ratio':>6} "
          f"{'target':>11} {'GPU ms':>7} {'MiB':>5} verified  budget")
    for pair, test, m in rows:
        b = budgets[test]
        budget = f"{b.bytes_per_copy // MiB}MiBx{b.copies}x{b.samples}+{b.warmup}"
        if not isinstance(m, Measurement):
            print(f"{pair:6} {test.value:10} FAILED {m}")
            ok_all = False
            continue
        if test is TestName.ALLREDUCE:
            goal = Target(nccl_reference(measured, b.bytes_per_copy), "nccl", 0.0)
        else:
            goal = goals[test]
        value = shown(test, m)
        ratio = value / goal.reference
        in_range = goal.low <= ratio <= goal.high
        own_memory = m.device_memory_bytes
        if test is TestName.ALLREDUCE:  # NCCL's communicator buffers are not the probe's
            own_memory = 2 * b.bytes_per_copy
            notes.append(f"allreduce memory {m.device_memory_bytes / MiB:.0f} MiB per GPU = "
                         f"probe buffers {own_memory / MiB:.0f} MiB + NCCL communicator buffers "
                         f"{(m.device_memory_bytes - own_memory) / MiB:.0f} MiB (made and freed "
                         "by the test; the 512 MiB bound is checked on the probe's buffers)")
        cheap = m.gpu_time_s <= MAX_GPU_S and own_memory <= MAX_MEMORY
        ok = in_range and cheap and m.verified
        ok_all &= ok
        unit = "ns" if test is TestName.LATENCY else "GB/s"
        span = f">={goal.low:.2f}" if goal.high == math.inf else f"{goal.low:.2f}-{goal.high:.2f}"
        print(f"{pair:6} {test.value:10} {value:7.1f}{unit:>3} {goal.reference:7.1f}{unit:>3} "
              f"{ratio:6.3f} {span:>11} {m.gpu_time_s * 1e3:7.2f} "
              f"{m.device_memory_bytes / MiB:5.0f} {str(m.verified):8}  {budget}"
              f"{'' if ok else '  <-- MISSED'}")
    for note in notes:
        print(note)
    return ok_all


def whole_sweep(fabric) -> str:
    """The same tests through the sweep engine: counters read around each test, inventory."""
    from peerwatch.probes.sweep import SweepOptions, run_sweep

    outcome = run_sweep(fabric, SweepOptions(force=True))
    cost = outcome.cost
    contended = sum(r.contended for r in outcome.results)
    failed = [f"{r.test}:{r.error}" for r in outcome.results if r.error]
    return (f"through peerwatch.probes.sweep: {len(outcome.results)} results, GPU time "
            f"{cost.gpu_time_s * 1e3:.1f} ms, wall time {cost.wall_time_s:.2f} s (counters and "
            f"inventory included), peak {cost.device_memory_bytes_max / MiB:.0f} MiB, "
            f"{contended} contended, failed: {failed or 'none'}")


def main() -> int:
    t0 = time.perf_counter()
    fabric = real_fabric_or_skip()
    if fabric is None:
        return 0
    measured = json.loads(MEASURED.read_text())
    budgets = DEFAULT_BUDGETS
    try:
        warm = replace(budgets[TestName.CE_WRITE].spec(TestName.CE_WRITE, 0, 1), copies=1,
                       samples=1)
        if fabric.gpu_count() >= 2:
            fabric.measure(warm)  # compile the kernels, create the streams
        setup = time.perf_counter() - t0
        rows, gpu, wall = run(fabric, budgets)
        resident = fabric.transfers().nccl_resident_bytes
        sweep = whole_sweep(fabric)
    finally:
        fabric.close()
    ok = report(rows, budgets, measured)
    print(f"sweep: {len(rows)} tests, GPU time {gpu * 1e3:.1f} ms, wall time {wall:.2f} s "
          f"(setup before it: {setup:.2f} s; nvbandwidth's full run: about 60 s)")
    print(sweep)
    if resident is not None:
        print(f"NCCL's kernels, loaded by the first all-reduce, stay resident: "
              f"{resident / MiB:.0f} MiB per GPU (once per process, not per test)")
    return 0 if ok else 1


if __name__ == "__main__":
    from bench.helpers.cli import no_options

    no_options(__doc__, __file__)
    raise SystemExit(main())
