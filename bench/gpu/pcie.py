"""The per-GPU tests (h2d, d2h, local) on this host's GPUs, against nvbandwidth's method.

Run it on a GPU host from the repository root (the lent one-H200 machine, PCIe Gen5 x16):

    python3 bench/gpu/pcie.py            # or: source bench/gpu/_env.sh; python3 bench/gpu/pcie.py

For every GPU it runs the probe's own tests (`RealFabric.measure` with the sweep's default
budgets from probes/budgets.py, after one warm-up run, median of REPEATS runs) and prints each
figure with the GPU time the test used. Each figure is compared with
  (a) nvbandwidth v0.8's figures recorded in ../shared/REFERENCE.md (the 2 x H200 machine:
      host_to_device_memcpy_ce 55.5 GB/s, device_local_copy 2095 GB/s; no d2h figure was
      recorded there), and
  (b) a reference measured here, in the same run, with nvbandwidth's method reimplemented in
      plain CuPy below (`reference`): 512 MiB buffers, 16 copies per sample, 3 samples, the
      median, copy engine, pinned host memory on the GPU's NUMA node. It is a
      reimplementation of the method, NOT nvbandwidth itself (which is not installed there).
Targets: >= 0.97 of (b) for every test, <= 5 ms GPU time per GPU for the three together.
The last lines are a table of ratios. Without a GPU it prints 'skipped' and exits 0. Every
test's error is caught and printed; the table is always printed. Exit status 0 when every
target is met, 1 otherwise.
"""

from __future__ import annotations

import contextlib
import ctypes
import statistics
import sys
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

MiB = 1 << 20
REPEATS = 5
MIN_RATIO = 0.97
MAX_GPU_S = 5e-3
NVBANDWIDTH_GBPS = {"h2d": 55.5, "d2h": None, "local": 2095.0}  # REFERENCE.md sections 1, 6
REF_BYTES, REF_COPIES, REF_SAMPLES = 512 * MiB, 16, 3
KINDS = {"h2d": 1, "d2h": 2, "local": 3}  # cudaMemcpyKind
TESTS = ("h2d", "d2h", "local")


@dataclass
class Row:
    gpu: int
    test: str
    probe_gbps: float | None = None
    probe_gpu_ms: float | None = None
    verified: bool | None = None
    reference_gbps: float | None = None
    errors: list[str] = field(default_factory=list)

    def ratio(self, against: float | None) -> float | None:
        if self.probe_gbps is None or not against:
            return None
        return self.probe_gbps / against


def probe_figure(fabric: Any, gpu: int, test: str) -> tuple[float, float, bool]:
    """(GB/s, GPU ms, verified): the median of REPEATS runs after one warm-up run."""
    from peerwatch.probes.budgets import DEFAULT_BUDGETS
    from peerwatch.probes.report import TestName

    name = TestName(test)
    spec = DEFAULT_BUDGETS[name].spec(name, gpu)
    fabric.measure(spec)
    runs = [fabric.measure(spec) for _ in range(REPEATS)]
    return (statistics.median(m.value for m in runs) / 1e9,
            statistics.median(m.gpu_time_s for m in runs) * 1e3,
            all(m.verified for m in runs))


def reference(cp: Any, device: int, test: str, cpus: frozenset[int]) -> float:
    """nvbandwidth's method in plain CuPy: REF_COPIES copies of REF_BYTES per sample, timed
    with events around the queued copies, REF_SAMPLES samples, the median, in GB/s."""
    rt, n = cp.cuda.runtime, REF_BYTES
    with cp.cuda.Device(device):
        stream = cp.cuda.Stream(non_blocking=True)
        dev_a, dev_b = cp.empty(n, cp.uint8), cp.empty(n, cp.uint8)
        host = None
        if test != "local":
            with cpu_pin(cpus):  # as the probe does: pages on the GPU's NUMA node
                host = cp.cuda.PinnedMemory(n)
                ctypes.memset(host.ptr, 1, n)
        dst, src = {"h2d": (dev_a.data.ptr, host.ptr if host else 0),
                    "d2h": (host.ptr if host else 0, dev_a.data.ptr),
                    "local": (dev_b.data.ptr, dev_a.data.ptr)}[test]
        rt.memcpyAsync(dst, src, n, KINDS[test], stream.ptr)  # warm-up
        samples = []
        for _ in range(REF_SAMPLES):
            start, stop = cp.cuda.Event(), cp.cuda.Event()
            start.record(stream)
            for _ in range(REF_COPIES):
                rt.memcpyAsync(dst, src, n, KINDS[test], stream.ptr)
            stop.record(stream)
            stop.synchronize()
            samples.append(n * REF_COPIES / (cp.cuda.get_elapsed_time(start, stop) / 1e3))
        stream.synchronize()
        del dev_a, dev_b, host
        return statistics.median(samples) / 1e9


def cpu_pin(cpus: frozenset[int]) -> Any:
    """The probe's own NUMA placement (probes/nvidia/gpu_copies.py), or none without it."""
    try:
        from peerwatch.probes.nvidia.gpu_copies import on_cpus
    except ImportError:
        return contextlib.nullcontext()
    return on_cpus(cpus)


def measure_gpu(fabric: Any, cp: Any, gpu: int) -> list[Row]:
    """The three tests on NVML's `gpu` (with `fabric`), or on CUDA device `gpu` by the
    reference alone (`fabric` None: the probe could not be imported)."""
    rows = []
    cuda, cpus = gpu, frozenset[int]()
    if fabric is not None:
        cuda = fabric._cuda(gpu)  # the NVML index's CUDA ordinal
        cpus = fabric.transfers().local_cpus.get(cuda, frozenset())
    for test in TESTS:
        row = Row(gpu, test)
        try:
            if fabric is None:
                raise RuntimeError("the probe could not be imported (see above)")
            row.probe_gbps, row.probe_gpu_ms, row.verified = probe_figure(fabric, gpu, test)
        except Exception as exc:  # noqa: BLE001 - a report script: say what broke, go on
            row.errors.append(f"probe: {type(exc).__name__}: {exc}")
            if fabric is not None:
                traceback.print_exc()
        try:
            row.reference_gbps = reference(cp, cuda, test, cpus)
        except Exception as exc:  # noqa: BLE001
            row.errors.append(f"reference: {type(exc).__name__}: {exc}")
            traceback.print_exc()
        print(f"GPU{gpu} {test}: probe {fmt(row.probe_gbps)} GB/s in {fmt(row.probe_gpu_ms, 2)} "
              f"ms GPU time (verified {row.verified}); same-run reference "
              f"{fmt(row.reference_gbps)} GB/s; local CPUs {len(cpus)}"
              + "".join(f"; {e}" for e in row.errors), flush=True)
        rows.append(row)
    return rows


def fmt(v: float | None, digits: int = 1) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def table(rows: list[Row]) -> tuple[list[str], bool]:
    lines = ["", "GPU test    probe GB/s  GPU ms  /same-run ref  /nvbandwidth (REFERENCE.md)"]
    ok = bool(rows)
    for r in rows:
        same, nvb = r.ratio(r.reference_gbps), r.ratio(NVBANDWIDTH_GBPS[r.test])
        ok = ok and same is not None and same >= MIN_RATIO and bool(r.verified)
        lines.append(f"{r.gpu:<3} {r.test:<7} {fmt(r.probe_gbps):>10}  {fmt(r.probe_gpu_ms, 2):>6}"
                     f"  {fmt(same, 3):>13}  {fmt(nvb, 3):>12}")
    for gpu in sorted({r.gpu for r in rows}):
        spent = [r.probe_gpu_ms for r in rows if r.gpu == gpu]
        total = sum(s for s in spent if s is not None)
        ok = ok and None not in spent and total <= MAX_GPU_S * 1e3
        lines.append(f"GPU{gpu}: {total:.2f} ms GPU time for the three tests "
                     f"(target <= {MAX_GPU_S * 1e3:.0f} ms)")
    lines.append(f"targets (>= {MIN_RATIO} of the same-run reference, verified, GPU time): "
                 + ("met" if ok else "NOT met"))
    return lines, ok


def reference_only() -> tuple[Any, int] | None:
    """(cupy, device count) for the reference alone, or None (after 'skipped') without a GPU."""
    try:
        import cupy

        count = int(cupy.cuda.runtime.getDeviceCount()) if cupy.cuda.is_available() else 0
    except Exception as exc:  # noqa: BLE001 - no CuPy, no driver: no GPU here
        print(f"skipped: no GPU here ({type(exc).__name__}: {exc})")
        return None
    if not count:
        print("skipped: no GPU here (CUDA sees none)")
        return None
    return cupy, count


def main() -> int:
    rows: list[Row] = []
    try:
        try:
            from bench.helpers.gpu import real_fabric_or_skip
            from peerwatch.probes.nvidia.real import RealFabric  # noqa: F401 - needs pydantic, NVML
        except ImportError as exc:
            print(f"the probe cannot be imported here ({exc}): carry its wheels "
                  "(WHL=dir, see bench/gpu/_env.sh); measuring the reference alone")
            found = reference_only()
            if found is None:
                return 0
            for device in range(found[1]):
                rows += measure_gpu(None, found[0], device)
        else:
            fabric = real_fabric_or_skip()
            if fabric is None:
                return 0
            import cupy

            for gpu in range(fabric.gpu_count()):
                rows += measure_gpu(fabric, cupy, gpu)
    except Exception as exc:  # noqa: BLE001 - always end with the table
        print(f"stopped early: {type(exc).__name__}: {exc}")
        traceback.print_exc()
    lines, ok = table(rows)
    print("\n".join(lines))
    return 0 if ok else 1


if __name__ == "__main__":
    from bench.helpers.cli import no_options

    no_options(__doc__, __file__)
    sys.exit(main())
