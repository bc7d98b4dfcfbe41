"""CuPy transfer tests between GPU pairs: the only module that imports cupy.

`Transfers.measure(spec)` runs one `TestSpec` and returns a `Measurement`. The method is
nvbandwidth's (../shared/REFERENCE.md section 4), made cheap enough to run beside jobs:
- everything a test does is queued behind one spin kernel and released at once, so the GPU
  runs fill, warm-up, timed samples and verification back to back and host launch gaps never
  fall inside a timed window (or inflate the test's GPU time);
- each sample is timed with CUDA events on the stream that does the work; bidirectional and
  multi-GPU work starts from the same event and joins back before the stop event;
- the value is the median of the samples; data are verified on the device after the copies
  (a position-dependent pattern written before, counted after), never over the probed link;
- device memory is plain cudaMalloc, counted per GPU and freed when the test ends.

Indices here are CUDA device ordinals; `probes/nvidia/real.py` maps NVML indices onto them by
PCI id.
CUDA, NVRTC and NCCL errors become `TransferError` (chained); a test that does not finish
within `timeout_s` raises `TransferTimeout`.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from typing import Any

from peerwatch.probes.errors import BadProbeRequest, FabricUnavailable, TransferError
from peerwatch.probes.fabric import Measurement, TestSpec
from peerwatch.probes.nvidia import kernels
from peerwatch.probes.nvidia.all_to_all import measure_all_to_all
from peerwatch.probes.nvidia.cuda_host import MEMCPY_DEVICE_TO_HOST, MEMCPY_HOST_TO_DEVICE
from peerwatch.probes.nvidia.gpu_copies import measure_gpu_test
from peerwatch.probes.nvidia.timed_copies import timed_copies
from peerwatch.probes.nvidia.transfer_run import Buffer, Run
from peerwatch.probes.report import GPU_TESTS, JOINT_TESTS, TestName

PEER_ACCESS_ALREADY_ENABLED = 704  # cudaErrorPeerAccessAlreadyEnabled: not exported by CuPy
GPUDIRECT_RDMA_SUPPORTED = 116  # cudaDevAttrGPUDirectRDMASupported
STAGED_CHUNK_BYTES = 8 << 20  # staged copies move through pinned host memory in chunks ...
STAGED_SLOTS = 4  # ... with this many chunks in flight
LATENCY_WIRE_BYTES_PER_HOP = 32  # a remote 8-byte load brings back one 32-byte sector
# NCCL settings the probe uses unless the environment says otherwise. NVLink SHARP (multicast)
# is off on shared hosts and its buffers would cost memory the probe must not hold.
NCCL_DEFAULTS: dict[str, str] = {"NCCL_NVLS_ENABLE": "0"}
Flow = tuple[Buffer, Buffer, int]  # (source, destination, the device that issues the copy)


def load_cupy() -> Any:
    """CuPy with a usable GPU, else FabricUnavailable (CuPy imports fine without a driver)."""
    try:
        import cupy  # optional: the gpu extra; a missing one is FabricUnavailable
    except ImportError as exc:
        raise FabricUnavailable("CuPy is not installed (pip install 'peerwatch[gpu]')") from exc
    try:
        available = cupy.cuda.is_available()
    except Exception as exc:  # noqa: BLE001 - any failure to reach CUDA means: not here
        raise FabricUnavailable(f"CUDA is not usable: {exc}") from exc
    if not available:
        raise FabricUnavailable("CUDA sees no GPU (no driver, or no device visible)")
    return cupy


def load_nccl() -> tuple[Any, Any]:
    """(CuPy, CuPy's NCCL module) for the cross-host transfer (net_transfers.py, which never
    imports cupy itself), with NCCL_DEFAULTS set unless the environment says otherwise;
    FabricUnavailable where either is missing."""
    cupy = load_cupy()
    try:
        from cupy.cuda import nccl  # CuPy's NCCL: only where a pair job's rank measures
    except ImportError as exc:
        raise FabricUnavailable(f"CuPy has no NCCL here: {exc}") from exc
    if not nccl.available:
        raise FabricUnavailable("NCCL is not available in this CuPy build")
    for key, value in NCCL_DEFAULTS.items():
        os.environ.setdefault(key, value)
    return cupy, nccl


class Transfers:
    """Transfer tests on this host's GPUs. Keep one per process; `close()` releases NCCL."""

    def __init__(self, cupy_module: Any = None, timeout_s: float = 10.0) -> None:
        self.cp = cupy_module if cupy_module is not None else load_cupy()
        import numpy  # CuPy's own dependency: present wherever CuPy is

        self.np = numpy
        self.rt = self.cp.cuda.runtime
        self.timeout_s = timeout_s
        self.errors: tuple[type[BaseException], ...] = (
            self.rt.CUDARuntimeError,
            self.cp.cuda.driver.CUDADriverError,
            self.cp.cuda.compiler.CompileException,
        )
        try:
            self.count = int(self.rt.getDeviceCount())
        except self.errors as exc:
            raise FabricUnavailable(f"CUDA cannot count GPUs: {exc}") from exc
        self._modules: dict[int, Any] = {}
        self._functions: dict[tuple[int, str], Any] = {}
        self._streams: dict[int, Any] = {}
        self._peer: set[tuple[int, int]] = set()
        self._sms: dict[int, int] = {}
        # Each device's local CPUs (set by probes/nvidia/real.py from NVML): where h2d/d2h
        # place their pinned host buffers (probes/nvidia/gpu_copies.py).
        self.local_cpus: dict[int, frozenset[int]] = {}
        self.nccl_resident_bytes: int | None = None  # NCCL's kernels, once loaded, per GPU
        # The hold: spin kernels wait until this pinned counter reaches their ticket.
        self._flag_mem = self.cp.cuda.alloc_pinned_memory(64)
        self.flag = numpy.frombuffer(self._flag_mem, numpy.uint32, 1)
        self.flag[0] = 0
        self.flag_ptr = int(self._flag_mem.ptr)
        self.ticket = 0

    # ------------------------------------------------------------------ device plumbing

    def device(self, index: int) -> Any:
        return self.cp.cuda.Device(index)

    def kernel(self, device: int, name: str) -> Any:
        """A kernel from probes/nvidia/kernels.py, compiled (NVRTC) once per device."""
        key = (device, name)
        if key not in self._functions:
            with self.device(device):
                if device not in self._modules:
                    self._modules[device] = self.cp.RawModule(code=kernels.SOURCE)
                self._functions[key] = self._modules[device].get_function(name)
        return self._functions[key]

    def stream(self, device: int) -> Any:
        if device not in self._streams:
            with self.device(device):
                self._streams[device] = self.cp.cuda.Stream(non_blocking=True)
        return self._streams[device]

    def sm_count(self, device: int) -> int:
        if device not in self._sms:
            props = self.rt.getDeviceProperties(device)
            self._sms[device] = int(props["multiProcessorCount"])
        return self._sms[device]

    def bus_id(self, device: int) -> str:
        """CUDA's PCI id of a device, e.g. '0000:00:06.0' (how NVML indices are matched)."""
        return str(self.rt.deviceGetPCIBusId(device))

    def can_access_peer(self, a: int, b: int) -> bool:
        return bool(self.rt.deviceCanAccessPeer(a, b))

    def gpudirect_rdma(self, device: int) -> bool | None:
        try:
            return bool(self.rt.deviceGetAttribute(GPUDIRECT_RDMA_SUPPORTED, device))
        except self.errors:
            return None

    def enable_peer(self, a: int, b: int, required: bool) -> bool:
        """Let device a address b's memory. Without it a CE copy is staged by the driver and
        a kernel cannot touch the peer at all (required=True then raises)."""
        if (a, b) in self._peer:
            return True
        if not self.can_access_peer(a, b):
            if required:
                raise TransferError(f"GPU {a} cannot access GPU {b}'s memory "
                                    "(cudaDeviceCanAccessPeer = 0): no P2P on this pair")
            return False
        with self.device(a):
            try:
                self.rt.deviceEnablePeerAccess(b)
            except self.rt.CUDARuntimeError as exc:
                if exc.status != PEER_ACCESS_ALREADY_ENABLED:
                    raise
        self._peer.add((a, b))
        return True

    def close(self) -> None:
        """Nothing is held between tests (buffers and NCCL communicators are per test)."""

    # ------------------------------------------------------------------ measure

    def measure(self, spec: TestSpec) -> Measurement:
        self._validate(spec)
        try:
            return self._dispatch(spec)
        except self.errors as exc:
            raise TransferError(f"{spec.label()}: {exc}") from exc
        except TransferError:
            raise
        except Exception as exc:
            if type(exc).__name__ == "NcclError":
                raise TransferError(f"{spec.label()}: NCCL: {exc}") from exc
            raise

    def _validate(self, spec: TestSpec) -> None:
        one = spec.test in GPU_TESTS
        many = spec.test in (TestName.ALLREDUCE, TestName.NVLS_ALLREDUCE, *JOINT_TESTS)
        gpus = (list(spec.gpus) if many else [spec.src] if one else [spec.src, spec.dst])
        if any(g is None or not 0 <= g < self.count for g in gpus):
            raise BadProbeRequest(f"{spec.label()}: CUDA sees GPUs 0..{self.count - 1}")
        if one and (spec.dst is not None or spec.gpus):
            raise BadProbeRequest(f"{spec.label()}: a per-GPU test names one GPU as src")
        if not one and (len(set(gpus)) != len(gpus) or len(gpus) < 2):
            raise BadProbeRequest(f"{spec.label()}: needs distinct GPUs")
        if spec.copies < 1 or spec.samples < 1 or spec.warmup < 0:
            raise BadProbeRequest(f"{spec.label()}: copies and samples must be >= 1")
        step = 2 * kernels.CHASE_STRIDE if spec.test is TestName.LATENCY else 16
        if spec.bytes_per_copy < step or spec.bytes_per_copy % step:
            raise BadProbeRequest(f"{spec.label()}: bytes_per_copy must be a multiple of {step}")

    def _dispatch(self, spec: TestSpec) -> Measurement:
        src, dst = spec.src, spec.dst
        if spec.test is TestName.ALLREDUCE:
            return self._allreduce(spec)
        if spec.test is TestName.NVLS_ALLREDUCE:
            return self._nvls_allreduce(spec)
        if spec.test is TestName.A2A_CE:
            return measure_all_to_all(self, spec)
        if spec.test is TestName.A2A_NCCL:
            return self._nccl_all_to_all(spec)
        if spec.test in GPU_TESTS:
            return measure_gpu_test(self, spec)
        assert src is not None and dst is not None
        if spec.test is TestName.LATENCY:
            return self._latency(spec, src, dst)
        if spec.test is TestName.STAGED:
            return self._staged(spec, src, dst)
        issuer = dst if spec.test in (TestName.CE_READ, TestName.SM_READ) else src
        sm = spec.test in (TestName.SM_WRITE, TestName.SM_READ)
        return self._bandwidth(spec, src, dst, issuer, sm=sm,
                               bidir=spec.test is TestName.CE_BIDIR)

    # ------------------------------------------------------------------ the tests

    def _copier(self, run: Run, sm: bool, issuer: int, src: tuple[int, int],
                dst: tuple[int, int], n: int) -> Callable[[], None]:
        """One copy of n bytes from (device, ptr) src to dst, issued by `issuer`."""
        stream = self.stream(issuer)
        if sm:
            grid, block = self.sm_count(issuer), kernels.SM_THREADS
            args = (self.np.uint64(src[1]), self.np.uint64(dst[1]), self.np.uint64(n // 16))
            return lambda: run.launch(issuer, "pw_copy", grid, block, args)

        def ce() -> None:
            with self.device(issuer):
                self.rt.memcpyPeerAsync(dst[1], dst[0], src[1], src[0], n, stream.ptr)
        return ce

    def _flows_step(self, run: Run, sm: bool, flows: list[Flow], n: int) -> Callable[[], None]:
        """One step of a pair test: every flow's copy, issued in turn."""
        copies = [self._copier(run, sm, who, s, d, n) for s, d, who in flows]

        def one() -> None:
            for copy in copies:
                copy()

        return one

    def _bandwidth(self, spec: TestSpec, src: int, dst: int, issuer: int, *, sm: bool,
                   bidir: bool) -> Measurement:
        n = spec.bytes_per_copy
        other = dst if issuer == src else src
        self.enable_peer(issuer, other, required=sm)
        if bidir:
            self.enable_peer(other, issuer, required=False)
        with Run(self, [issuer, other]) as run:
            flows = [(run.alloc(src, n), run.alloc(dst, n), issuer)]
            if bidir:
                flows.append((run.alloc(dst, n), run.alloc(src, n), dst))
            seeds = [secrets.randbits(31) | 1 for _ in flows]

            def prepare() -> None:
                for (s, d, _), seed in zip(flows, seeds, strict=True):
                    run.fill(s, n, seed)
                    run.poison(d, n)

            def check() -> None:
                for (_, d, _), seed in zip(flows, seeds, strict=True):
                    run.check(d, n, seed)

            windows, gpu_s = timed_copies(run, spec, prepare=prepare, check=check,
                                          step=lambda: self._flows_step(run, sm, flows, n))
            moved = n * spec.copies * len(flows)
            total_copies = spec.warmup + spec.copies * spec.samples
            wire = {src: n * total_copies, dst: n * total_copies if bidir else 0}
            return Measurement(
                samples=[moved / run.seconds(w) for w in windows],
                gpu_time_s=gpu_s, device_memory_bytes=run.peak_bytes(),
                verified=run.bad_words() == 0, wire_bytes=wire,
            )

    def _staged(self, spec: TestSpec, src: int, dst: int) -> Measurement:
        """P2P off: src -> pinned host -> dst in chunks, D2H on src's stream and H2D on dst's
        overlapped, a chunk slot reused only once its H2D has finished."""
        n = spec.bytes_per_copy
        chunk = min(STAGED_CHUNK_BYTES, n)
        with Run(self, [src, dst]) as run:
            a, b = run.alloc(src, n), run.alloc(dst, n)
            host = run.pinned(chunk * STAGED_SLOTS)
            to_host = [run.event(src) for _ in range(STAGED_SLOTS)]
            to_dev = [run.event(dst) for _ in range(STAGED_SLOTS)]
            s_src, s_dst = self.stream(src), self.stream(dst)
            seed = secrets.randbits(31) | 1
            used = [0]

            def one() -> None:
                for off in range(0, n, chunk):
                    size, slot = min(chunk, n - off), used[0] % STAGED_SLOTS
                    slot_ptr = host + slot * chunk
                    if used[0] >= STAGED_SLOTS:
                        s_src.wait_event(to_dev[slot])
                    with self.device(src):
                        self.rt.memcpyAsync(slot_ptr, a[1] + off, size,
                                            MEMCPY_DEVICE_TO_HOST, s_src.ptr)
                    to_host[slot].record(s_src)
                    s_dst.wait_event(to_host[slot])
                    with self.device(dst):
                        self.rt.memcpyAsync(b[1] + off, slot_ptr, size,
                                            MEMCPY_HOST_TO_DEVICE, s_dst.ptr)
                    to_dev[slot].record(s_dst)
                    used[0] += 1

            def prepare() -> None:
                run.fill(a, n, seed)
                run.poison(b, n)

            windows, gpu_s = timed_copies(run, spec, prepare=prepare, step=lambda: one,
                                          check=lambda: run.check(b, n, seed))
            return Measurement(
                samples=[n * spec.copies / run.seconds(w) for w in windows],
                gpu_time_s=gpu_s, device_memory_bytes=run.peak_bytes(),
                verified=run.bad_words() == 0, wire_bytes={src: 0, dst: 0},
            )

    def _latency(self, spec: TestSpec, src: int, dst: int) -> Measurement:
        """One thread on src follows a pointer chain in dst's memory; `copies` hops a sample."""
        self.enable_peer(src, dst, required=True)
        stride = kernels.CHASE_STRIDE
        nodes = spec.bytes_per_copy // stride
        hops = spec.copies
        with Run(self, [src, dst]) as run:
            chain = run.alloc(dst, nodes * stride)
            outs = run.alloc(src, 8 * (spec.samples + 1))
            u64 = self.np.uint64
            run.begin()
            run.launch(dst, "pw_chain", run.grid(dst, nodes), kernels.FILL_THREADS,
                       (u64(chain[1]), u64(nodes), u64(stride)))
            run.barrier()
            if spec.warmup:
                run.launch(src, "pw_chase", 1, 1,
                           (u64(chain[1]), u64(spec.warmup), u64(outs[1] + 8 * spec.samples)))

            def chase(sample: int) -> Callable[[], None]:
                out = u64(outs[1] + 8 * sample)
                return lambda: run.launch(src, "pw_chase", 1, 1, (u64(chain[1]), u64(hops), out))

            windows = [run.timed(chase(s), 1) for s in range(spec.samples)]
            gpu_s = run.end()
            ends = run.read_u64(outs, spec.samples)
            want = chain[1] + (hops % nodes) * stride
            total_hops = spec.warmup + hops * spec.samples
            return Measurement(
                samples=[run.seconds(w) / hops for w in windows],
                gpu_time_s=gpu_s, device_memory_bytes=run.peak_bytes(),
                verified=all(e == want for e in ends),
                wire_bytes={src: 0, dst: total_hops * LATENCY_WIRE_BYTES_PER_HOP},
            )

    def _communicators(self, gpus: tuple[int, ...]) -> tuple[list[Any], dict[int, int]]:
        """NCCL communicators for `gpus` (one process, one per GPU) and the device memory
        their buffers hold on each GPU. They are made for one test and destroyed after it:
        a probe must not keep NCCL's buffers between sweeps. The first ones in a process also
        load NCCL's kernels, which stay resident: that one-time cost is measured apart
        (`nccl_resident_bytes`), not charged to every all-reduce."""
        from cupy.cuda import nccl  # CuPy's NCCL, loaded only for an all-reduce

        if not nccl.available:
            raise TransferError("NCCL is not available in this CuPy build")
        for key, value in NCCL_DEFAULTS.items():
            os.environ.setdefault(key, value)
        if self.nccl_resident_bytes is None:
            start = {g: self._free_memory(g) for g in gpus}
            self._destroy(self._ready_communicators(nccl, gpus))
            self.nccl_resident_bytes = max(start[g] - self._free_memory(g) for g in gpus)
        free_before = {g: self._free_memory(g) for g in gpus}
        comms = self._ready_communicators(nccl, gpus)
        held = {g: max(0, free_before[g] - self._free_memory(g)) for g in gpus}
        return comms, held

    def _ready_communicators(self, nccl: Any, gpus: tuple[int, ...]) -> list[Any]:
        comms = nccl.NcclCommunicator.initAll(list(gpus))
        try:
            with Run(self, list(gpus)) as run:  # a first call makes NCCL finish its setup
                bufs = {g: run.alloc(g, 4096) for g in gpus}
                self._allreduce_once(comms, gpus, bufs, bufs, 1024)
                run.sync()
        except BaseException:
            self._destroy(comms)
            raise
        return comms

    @staticmethod
    def _destroy(comms: list[Any]) -> None:
        for comm in comms:
            comm.destroy()

    def _free_memory(self, device: int) -> int:
        with self.device(device):
            return int(self.rt.memGetInfo()[0])

    def _allreduce_once(self, comms: list[Any], gpus: tuple[int, ...],
                        send: dict[int, tuple[int, int]], recv: dict[int, tuple[int, int]],
                        count: int) -> None:
        from cupy.cuda import nccl  # CuPy's NCCL, loaded only for an all-reduce

        nccl.groupStart()
        for comm, g in zip(comms, gpus, strict=True):
            with self.device(g):
                comm.allReduce(send[g][1], recv[g][1], count, nccl.NCCL_FLOAT32, nccl.NCCL_SUM,
                               self.stream(g).ptr)
        nccl.groupEnd()

    def _nccl_all_to_all(self, spec: TestSpec) -> Measurement:
        """NCCL all-to-all as grouped send/recv (`all_to_all.py`), on communicators made
        for this test and destroyed after it."""
        from cupy.cuda import nccl  # CuPy's NCCL, loaded only for an NCCL test

        gpus = tuple(spec.gpus)
        comms, held = self._communicators(gpus)
        try:
            return measure_all_to_all(self, spec, (nccl, comms, held))
        finally:
            self._destroy(comms)

    def _nvls_allreduce(self, spec: TestSpec) -> Measurement:
        """All-reduce with NVLink SHARP allowed: only where the operator opted in, so that
        NCCL_NVLS_ENABLE=1 was set before NCCL first read it (NCCL reads its settings once
        a process); multicast buffers cost memory, so it is off by default."""
        if os.environ.get("NCCL_NVLS_ENABLE") != "1":
            raise TransferError(f"{spec.label()}: NVLS is off (NCCL_NVLS_ENABLE is not 1): "
                                "opt in with PEERWATCH_PROBE_NVLS=true")
        return self._allreduce(spec)

    def _allreduce(self, spec: TestSpec) -> Measurement:
        gpus = tuple(spec.gpus)
        comms, nccl_held = self._communicators(gpus)
        try:
            return self._allreduce_with(spec, gpus, comms, nccl_held)
        finally:
            self._destroy(comms)

    def _allreduce_with(self, spec: TestSpec, gpus: tuple[int, ...], comms: list[Any],
                        nccl_held: dict[int, int]) -> Measurement:
        n, count, k = spec.bytes_per_copy, spec.bytes_per_copy // 4, len(gpus)
        with Run(self, list(gpus)) as run:
            send = {g: run.alloc(g, n) for g in gpus}
            recv = {g: run.alloc(g, n) for g in gpus}

            def prepare() -> None:
                for rank, g in enumerate(gpus):
                    run.fill_f32(send[g], count, float(rank + 1))
                    run.poison(recv[g], n)

            def one() -> None:
                self._allreduce_once(comms, gpus, send, recv, count)

            def check() -> None:
                for g in gpus:
                    run.check_f32(recv[g], count, k * (k + 1) / 2)

            windows, gpu_s = timed_copies(run, spec, prepare=prepare, step=lambda: one,
                                          check=check)
            bus_factor = 2 * (k - 1) / k
            iterations = spec.warmup + spec.copies * spec.samples
            return Measurement(
                samples=[n * spec.copies / run.seconds(w) * bus_factor for w in windows],
                gpu_time_s=gpu_s,
                device_memory_bytes=max(run.bytes_on(g) + nccl_held[g] for g in gpus),
                verified=run.bad_words() == 0,
                wire_bytes={g: int(n * bus_factor * iterations) for g in gpus},
            )
