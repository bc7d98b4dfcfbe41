"""The real `net_write`: NCCL send/recv between this node's GPU and the other rank's, over the
network, through CuPy's NCCL. It never imports cupy itself: `transfers.load_nccl` does (the
cupy seam, `.importlinter`). The measuring logic, its limits and the abort are
probes/net_transfer.py's, the same the CPU tests drive with probes/sim/simnccl.py.

One rank per process, one GPU per rank: CUDA device `device` (0 by default: the scheduler
gives the rank its GPU through CUDA_VISIBLE_DEVICES). Buffers are plain device memory, made
at the first step and freed on close; the send buffer holds the rank's mark (rank + 1 in every
byte), so `check` proves what arrived is the other rank's. NCCL picks its transport itself:
between two nodes, the network (InfiniBand/RoCE, else sockets); on one host, NCCL_P2P_DISABLE=1
NCCL_SHM_DISABLE=1 make it take the network transport too (tests/gpu/test_net_transfers.py).
CUDA and NCCL errors become `TransferError` here, at the boundary.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any, TypeVar

from peerwatch.probes.errors import FabricUnavailable, TransferError
from peerwatch.probes.nvidia.transfers import load_nccl

T = TypeVar("T")


class NcclNet:
    """`NetTransport` on this node's GPU `device`."""

    def __init__(self, device: int = 0) -> None:
        self.cp, self.nccl = load_nccl()
        self.device = device
        self.errors: tuple[type[BaseException], ...] = (
            self.nccl.NcclError, self.cp.cuda.runtime.CUDARuntimeError,
            self.cp.cuda.driver.CUDADriverError, self.cp.cuda.memory.OutOfMemoryError)
        count = self._call("device count", self.cp.cuda.runtime.getDeviceCount)
        if not 0 <= device < count:
            raise FabricUnavailable(f"no CUDA device {device} here ({count} visible)")

    def _call(self, what: str, fn: Callable[[], T]) -> T:
        try:
            with self.cp.cuda.Device(self.device):
                return fn()
        except self.errors as exc:
            raise TransferError(f"{what}: {type(exc).__name__}: {exc}") from exc

    def unique_id(self) -> bytes:
        return bytes(b & 0xFF for b in self._call("ncclGetUniqueId", self.nccl.get_unique_id))

    def connect(self, uid: bytes, rank: int, ranks: int = 2) -> NcclPairComm:
        """ncclCommInitRank(ranks, uid, rank) on `device`: blocks until the other rank is in
        (`ranks=1`: a communicator of this GPU alone, how one GPU checks the id's form).
        CuPy takes the id as bytes in its newer releases (seen on an H100 host: "expected
        bytes, got tuple") and as a tuple of C chars in older ones, signed on x86 and
        unsigned on aarch64: each form is tried in that order, the first CuPy accepts used."""
        forms: tuple[object, ...] = (bytes(uid), tuple(b - 256 if b > 127 else b for b in uid),
                                     tuple(uid))
        refused: list[str] = []
        for form in forms:
            try:
                comm = self._call("ncclCommInitRank", partial(self.nccl.NcclCommunicator,
                                                              ranks, form, rank))
            except (TypeError, OverflowError) as exc:  # CuPy refused the id's form
                refused.append(f"{type(form).__name__}: {exc}")
                continue
            return NcclPairComm(self, comm, rank)
        raise TransferError("ncclCommInitRank: CuPy took the unique id in no known form ("
                            + "; ".join(refused) + ")")


class NcclPairComm:
    """`PairComm`: one rank's communicator, its stream and its two buffers."""

    def __init__(self, net: NcclNet, comm: Any, rank: int) -> None:
        self.net, self.comm, self.rank = net, comm, rank
        self.cp, self.nccl = net.cp, net.nccl
        self.stream = net._call("stream", lambda: self.cp.cuda.Stream(non_blocking=True))
        self.send: Any = None
        self.recv: Any = None

    @contextmanager
    def _on_device(self, what: str) -> Iterator[None]:
        try:
            with self.cp.cuda.Device(self.net.device):
                yield
        except self.net.errors as exc:
            raise TransferError(f"rank {self.rank}: {what}: {type(exc).__name__}: {exc}") \
                from exc

    def _buffers(self, nbytes: int) -> None:
        if self.send is not None and self.send.size == nbytes:
            return
        with self.stream:
            self.send = self.cp.full(nbytes, self.rank + 1, dtype=self.cp.uint8)
            self.recv = self.cp.zeros(nbytes, dtype=self.cp.uint8)

    def exchange(self, nbytes: int, iters: int) -> NcclStep:
        peer, ptr = 1 - self.rank, self.stream.ptr
        with self._on_device("send/recv"):
            self._buffers(nbytes)
            start, stop = self.cp.cuda.Event(), self.cp.cuda.Event()
            start.record(self.stream)
            for _ in range(iters):
                self.nccl.groupStart()
                self.comm.send(self.send.data.ptr, nbytes, self.nccl.NCCL_CHAR, peer, ptr)
                self.comm.recv(self.recv.data.ptr, nbytes, self.nccl.NCCL_CHAR, peer, ptr)
                self.nccl.groupEnd()
            stop.record(self.stream)
        return NcclStep(self, start, stop)

    def check(self) -> None:
        with self._on_device("check"), self.stream:
            ok = bool((self.recv == 2 - self.rank).all())
        if not ok:
            raise TransferError(f"rank {self.rank}: what arrived is not what rank "
                                f"{1 - self.rank} sent")

    def abort(self) -> None:
        with self._on_device("ncclCommAbort"):
            self.comm.abort()  # CuPy's abort is a no-op once the communicator is gone
        self.send = self.recv = None

    def close(self) -> None:
        with self._on_device("ncclCommDestroy"):
            self.comm.destroy()
            self.send = self.recv = None
            self.cp.get_default_memory_pool().free_all_blocks()


class NcclStep:
    """`Step`: the events around queued iterations; `done` also asks NCCL for an async error
    (ncclCommGetAsyncError), so a failed peer ends the wait before the deadline."""

    def __init__(self, comm: NcclPairComm, start: Any, stop: Any) -> None:
        self.comm, self.start, self.stop = comm, start, stop

    def done(self) -> bool:
        with self.comm._on_device("wait"):
            if self.stop.done:
                return True
            self.comm.comm.check_async_error()
        return False

    def seconds(self) -> float:
        with self.comm._on_device("elapsed time"):
            return float(self.comm.cp.cuda.get_elapsed_time(self.start, self.stop)) / 1e3
