"""One transfer test's life on the GPUs: buffers, the hold, timed windows, verification, cleanup.

Used only by probes/nvidia/transfers.py, which hands it its `Transfers` (and through it, CuPy),
known here as a `CudaHost` (cuda_host.py): this module never imports cupy itself. A `Run` is a
context manager; leaving it always releases the hold and frees every buffer it allocated, so a
failed test leaves no memory behind. Only a test that timed out keeps its buffers (freeing
memory a hung copy still writes would crash).
"""

from __future__ import annotations

import ctypes
import time
from collections.abc import Callable
from typing import Any

from peerwatch.probes.errors import TransferTimeout
from peerwatch.probes.nvidia import kernels
from peerwatch.probes.nvidia.cuda_host import MEMCPY_DEVICE_TO_HOST, CudaHost

HOLD_TIMEOUT_NS = 2_000_000_000  # a spin kernel gives up after 2 s even if never released
POLL_S = 50e-6
Buffer = tuple[int, int]  # (device, pointer)
Window = tuple[Any, Any]  # (start event, stop event) on the main device


class Run:
    def __init__(self, tr: CudaHost, devices: list[int]) -> None:
        self.tr = tr
        self.devices = devices
        self.main = devices[0]
        self.others = devices[1:]
        self._allocs: list[tuple[int, int, int]] = []  # (device, pointer, bytes)
        self._pinned: list[Any] = []
        self._host: list[int] = []  # cudaHostAlloc pointers
        self._bad: dict[int, Buffer] = {}
        self._outer: Window | None = None
        self._held = False
        self._timed_out = False
        self._u64 = tr.np.uint64

    def __enter__(self) -> Run:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ resources

    def alloc(self, device: int, nbytes: int) -> Buffer:
        with self.tr.device(device):
            ptr = int(self.tr.rt.malloc(nbytes))
        self._allocs.append((device, ptr, nbytes))
        return device, ptr

    def pinned(self, nbytes: int) -> int:
        mem = self.tr.cp.cuda.alloc_pinned_memory(nbytes)
        self._pinned.append(mem)
        return int(mem.ptr)

    def host_alloc(self, nbytes: int) -> int:
        """Pinned host memory of its own (cudaHostAlloc, not CuPy's pool, which would hand
        back pages placed for an earlier caller): placed on the calling thread's NUMA node."""
        ptr = int(self.tr.rt.hostAlloc(nbytes, 0))
        self._host.append(ptr)
        return ptr

    @staticmethod
    def host_view(ptr: int, nbytes: int) -> Any:
        """A writable buffer over host memory from `host_alloc` (for numpy.frombuffer)."""
        return (ctypes.c_char * nbytes).from_address(ptr)

    def bytes_on(self, device: int) -> int:
        return sum(n for d, _, n in self._allocs if d == device)

    def peak_bytes(self) -> int:
        return max(self.bytes_on(d) for d in self.devices)

    def event(self, device: int, timing: bool = False) -> Any:
        with self.tr.device(device):
            return self.tr.cp.cuda.Event(disable_timing=not timing)

    def stream(self, device: int) -> Any:
        return self.tr.stream(device)

    def close(self) -> None:
        self.release()
        if self._timed_out:
            return  # buffers stay allocated: a hung copy may still write into them
        try:
            for d in self.devices:
                self.stream(d).synchronize()
        finally:
            for device, ptr, _ in self._allocs:
                with self.tr.device(device):
                    self.tr.rt.free(ptr)
            self._allocs.clear()
            for ptr in self._host:
                self.tr.rt.freeHost(ptr)
            self._host.clear()
            if self._pinned:
                self._pinned.clear()
                self.tr.cp.get_default_pinned_memory_pool().free_all_blocks()

    # ------------------------------------------------------------------ kernels

    def grid(self, device: int, n: int) -> int:
        threads = kernels.FILL_THREADS
        return max(1, min((n + threads - 1) // threads, self.tr.sm_count(device) * 8))

    def launch(self, device: int, name: str, grid: int, block: int, args: tuple[Any, ...]) -> None:
        fn = self.tr.kernel(device, name)
        with self.tr.device(device):
            fn((grid,), (block,), args, stream=self.stream(device))

    def fill(self, buf: Buffer, nbytes: int, seed: int) -> None:
        d, ptr = buf
        words = nbytes // 4
        self.launch(d, "pw_fill", self.grid(d, words), kernels.FILL_THREADS,
                    (self._u64(ptr), self._u64(words), self.tr.np.uint32(seed)))

    def check(self, buf: Buffer, nbytes: int, seed: int) -> None:
        d, ptr = buf
        words = nbytes // 4
        self.launch(d, "pw_check", self.grid(d, words), kernels.FILL_THREADS,
                    (self._u64(ptr), self._u64(words), self.tr.np.uint32(seed),
                     self._u64(self._bad[d][1])))

    def fill_f32(self, buf: Buffer, count: int, value: float) -> None:
        d, ptr = buf
        self.launch(d, "pw_fill_f32", self.grid(d, count), kernels.FILL_THREADS,
                    (self._u64(ptr), self._u64(count), self.tr.np.float32(value)))

    def check_f32(self, buf: Buffer, count: int, want: float) -> None:
        d, ptr = buf
        self.launch(d, "pw_check_f32", self.grid(d, count), kernels.FILL_THREADS,
                    (self._u64(ptr), self._u64(count), self.tr.np.float32(want),
                     self._u64(self._bad[d][1])))

    def poison(self, buf: Buffer, nbytes: int) -> None:
        d, ptr = buf
        with self.tr.device(d):
            self.tr.rt.memsetAsync(ptr, 0, nbytes, self.stream(d).ptr)

    # ------------------------------------------------------------------ ordering and time

    def begin(self) -> None:
        """Hold the main stream with a spin kernel, then start the test's clock behind it;
        every other device's stream waits for that start. Nothing runs until `end()`."""
        for d in self.devices:
            self._bad[d] = self.alloc(d, 8)
        self.tr.ticket += 1
        self._held = True
        self.launch(self.main, "pw_spin", 1, 1,
                    (self._u64(self.tr.flag_ptr), self.tr.np.uint32(self.tr.ticket),
                     self._u64(HOLD_TIMEOUT_NS)))
        self._outer = (self.event(self.main, timing=True), self.event(self.main, timing=True))
        self._outer[0].record(self.stream(self.main))
        for d in self.others:
            self.stream(d).wait_event(self._outer[0])
        for buf in self._bad.values():
            self.poison(buf, 8)

    def release(self) -> None:
        if self._held:
            self.tr.flag[0] = self.tr.ticket
            self._held = False

    def barrier(self) -> None:
        """Every device's stream waits until all of them reach this point."""
        main = self.stream(self.main)
        for d in self.others:
            ev = self.event(d)
            ev.record(self.stream(d))
            main.wait_event(ev)
        joined = self.event(self.main)
        joined.record(main)
        for d in self.others:
            self.stream(d).wait_event(joined)

    def repeat(self, one: Callable[[], None], count: int) -> None:
        for _ in range(count):
            one()

    def timed(self, one: Callable[[], None], count: int) -> Window:
        """`count` repetitions between two events on the main stream; the other streams start
        from the same event and join back before the stop event."""
        start, stop = self.event(self.main, timing=True), self.event(self.main, timing=True)
        main = self.stream(self.main)
        start.record(main)
        for d in self.others:
            self.stream(d).wait_event(start)
        self.repeat(one, count)
        for d in self.others:
            ev = self.event(d)
            ev.record(self.stream(d))
            main.wait_event(ev)
        stop.record(main)
        return start, stop

    def end(self) -> float:
        """Release the hold, wait for everything, and return the GPU seconds the test took."""
        assert self._outer is not None, "begin() first"
        self.barrier()
        self._outer[1].record(self.stream(self.main))
        self.release()
        self._wait(self._outer[1])
        return self.seconds(self._outer)

    def sync(self) -> None:
        self.release()
        for d in self.devices:
            self.stream(d).synchronize()

    def _wait(self, event: Any) -> None:
        deadline = time.monotonic() + self.tr.timeout_s
        while not event.done:
            if time.monotonic() > deadline:
                self._timed_out = True
                raise TransferTimeout(f"transfer did not finish within {self.tr.timeout_s:g} s")
            time.sleep(POLL_S)

    def seconds(self, window: Window) -> float:
        return float(self.tr.cp.cuda.get_elapsed_time(window[0], window[1])) / 1e3

    # ------------------------------------------------------------------ results

    def read_u64(self, buf: Buffer, count: int) -> list[int]:
        host = self.tr.np.zeros(count, self.tr.np.uint64)
        with self.tr.device(buf[0]):
            self.tr.rt.memcpy(host.ctypes.data, buf[1], 8 * count, MEMCPY_DEVICE_TO_HOST)
        return [int(x) for x in host]

    def bad_words(self) -> int:
        """Words that failed verification, summed over every device that checked any."""
        return sum(self.read_u64(buf, 1)[0] for buf in self._bad.values())
