"""Per-GPU copy tests: host -> GPU (`h2d`), GPU -> host (`d2h`) and within the GPU (`local`).

Used only by probes/nvidia/transfers.py, which hands in its `Transfers` (and through it, CuPy),
known here as a `CudaHost` (cuda_host.py): this module never imports cupy itself. The method
is nvbandwidth's `host_to_device_memcpy_ce`, `device_to_host_memcpy_ce` and
`device_local_copy` (../shared/REFERENCE.md section 4), on the same `Run` as the pair tests:
copy-engine copies queued behind a spin kernel, timed with CUDA events, the median of the
samples, the data verified.

Host memory is pinned (cudaHostAlloc) and lands on the GPU's own NUMA node: the calling
thread is pinned to the GPU's local CPUs (NVML's CPU affinity, `Transfers.local_cpus`) while
the buffer is allocated and filled, so the kernel places every page on first touch next to
that CPU, then the thread's old affinity is restored. Without that, a dual-socket host would
measure the socket link as much as the GPU's PCIe link. CPUs the process may not use (a
container's cpuset) are left out; where none remain the buffer is allocated unpinned and the
result is still valid, only not NUMA-local.

Verification never costs PCIe bandwidth: h2d's host buffer is filled on the CPU with the
device pattern (`kernels.PATTERN_MULT`) and checked on the GPU; d2h's device buffer is filled
on the GPU and checked on the CPU after the test; local fills and checks on the GPU.
`local` counts each copied byte once (read + write together), as nvbandwidth does.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from peerwatch.probes.fabric import Measurement, TestSpec
from peerwatch.probes.nvidia import kernels
from peerwatch.probes.nvidia.cuda_host import (
    MEMCPY_DEVICE_TO_DEVICE,
    MEMCPY_DEVICE_TO_HOST,
    MEMCPY_HOST_TO_DEVICE,
    CudaHost,
)
from peerwatch.probes.nvidia.timed_copies import timed_copies
from peerwatch.probes.nvidia.transfer_run import Run
from peerwatch.probes.report import TestName


@contextmanager
def on_cpus(cpus: frozenset[int]) -> Iterator[bool]:
    """Run the block on `cpus` (those the process may use); yields whether it could."""
    if not cpus or not hasattr(os, "sched_setaffinity"):
        yield False
        return
    before = os.sched_getaffinity(0)
    usable = cpus & before
    if not usable:
        yield False
        return
    os.sched_setaffinity(0, usable)
    try:
        yield True
    finally:
        os.sched_setaffinity(0, before)


def pattern(tr: CudaHost, nbytes: int, seed: int) -> Any:
    """The words `pw_fill` writes, computed on the CPU (uint32 arithmetic wraps like the GPU's)."""
    np = tr.np
    words = np.arange(nbytes // 4, dtype=np.uint32)
    words *= np.uint32(kernels.PATTERN_MULT)
    words ^= np.uint32(seed)
    return words


def measure_gpu_test(tr: CudaHost, spec: TestSpec) -> Measurement:
    assert spec.src is not None
    if spec.test is TestName.LOCAL:
        return _local(tr, spec, spec.src)
    return _host(tr, spec, spec.src, to_device=spec.test is TestName.H2D)


def _host(tr: CudaHost, spec: TestSpec, gpu: int, *, to_device: bool) -> Measurement:
    n, seed = spec.bytes_per_copy, secrets.randbits(31) | 1
    with Run(tr, [gpu]) as run:
        with on_cpus(tr.local_cpus.get(gpu, frozenset())):
            host_ptr = run.host_alloc(n)
            host = tr.np.frombuffer(run.host_view(host_ptr, n), tr.np.uint32)
            if to_device:
                host[:] = pattern(tr, n, seed)
            else:
                host.fill(0)
        dev = run.alloc(gpu, n)
        stream = tr.stream(gpu)
        src, dst, kind = ((host_ptr, dev[1], MEMCPY_HOST_TO_DEVICE) if to_device
                          else (dev[1], host_ptr, MEMCPY_DEVICE_TO_HOST))

        def one() -> None:
            with tr.device(gpu):
                tr.rt.memcpyAsync(dst, src, n, kind, stream.ptr)

        def prepare() -> None:
            if to_device:
                run.poison(dev, n)
            else:
                run.fill(dev, n, seed)

        def check() -> None:
            if to_device:
                run.check(dev, n, seed)

        windows, gpu_s = timed_copies(run, spec, prepare=prepare, step=lambda: one, check=check)
        bad = run.bad_words() if to_device else int(
            tr.np.count_nonzero(host != pattern(tr, n, seed)))
        return Measurement(samples=[n * spec.copies / run.seconds(w) for w in windows],
                           gpu_time_s=gpu_s, device_memory_bytes=run.peak_bytes(),
                           verified=bad == 0, wire_bytes={gpu: 0})


def _local(tr: CudaHost, spec: TestSpec, gpu: int) -> Measurement:
    n, seed = spec.bytes_per_copy, secrets.randbits(31) | 1
    with Run(tr, [gpu]) as run:
        a, b = run.alloc(gpu, n), run.alloc(gpu, n)
        stream = tr.stream(gpu)

        def one() -> None:
            with tr.device(gpu):
                tr.rt.memcpyAsync(b[1], a[1], n, MEMCPY_DEVICE_TO_DEVICE, stream.ptr)

        def prepare() -> None:
            run.fill(a, n, seed)
            run.poison(b, n)

        windows, gpu_s = timed_copies(run, spec, prepare=prepare, step=lambda: one,
                                      check=lambda: run.check(b, n, seed))
        return Measurement(samples=[n * spec.copies / run.seconds(w) for w in windows],
                           gpu_time_s=gpu_s, device_memory_bytes=run.peak_bytes(),
                           verified=run.bad_words() == 0, wire_bytes={gpu: 0})
