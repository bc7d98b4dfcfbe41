"""`net_write` between two hosts: NCCL send/recv of GPU memory over the network, each rank
in its own process on its own node, behind one small interface so that every CPU test drives
the same logic with a simulated communicator (probes/sim/simnccl.py) that the real one
(probes/nvidia/net_transfers.py, CuPy's NCCL) runs on GPUs.

What is measured: in each iteration both ranks, in one NCCL group, send `nbytes` to the other
and receive `nbytes` from it, as nccl-tests' sendrecv_perf does with two ranks. The figure is
**one direction's** bytes per second while both directions run at once (bytes sent by a rank
over the timed iterations / their device time, CUDA events on the rank's stream), which is
what a full-duplex NIC carries each way: comparable with the line rate x NET_EFFICIENCY the
server expects (app/analysis/network.py). Warm-up iterations first (NCCL connects its
network transport on the first send), then the timed ones.

Nothing here may hang the rank for ever: NCCL calls queue work and return, so each step is
polled against a deadline. A communicator that does not come up in `connect_limit_s` (the
other rank never arrived) is abandoned in its thread; a step that does not finish in
`step_limit_s` (the peer died, the network stopped) aborts the communicator
(`ncclCommAbort`), and either is a `TransferTimeout`, which the rank posts as an error result.
"""

from __future__ import annotations

import base64
import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from peerwatch.probes.errors import PeerwatchProbeError, TransferError, TransferTimeout

POLL_S = 0.005  # between two looks at a queued step: small against its milliseconds


class Step(Protocol):
    """Iterations queued on a rank's stream, bracketed by timing events."""

    def done(self) -> bool:
        """Whether the stop event has passed; raises TransferError on NCCL's async error
        (the peer went away, the network failed)."""
        ...

    def seconds(self) -> float:
        """Device time between the events (only once done)."""
        ...


class PairComm(Protocol):
    """One rank's end of a two-rank NCCL communicator."""

    def exchange(self, nbytes: int, iters: int) -> Step:
        """Queue `iters` iterations of: send `nbytes` to the other rank and receive
        `nbytes` from it, in one group. Returns at once."""
        ...

    def check(self) -> None:
        """After a finished step: TransferError unless the other rank's data arrived."""
        ...

    def abort(self) -> None:
        """ncclCommAbort: stop whatever is queued and free the communicator."""
        ...

    def close(self) -> None:
        """Destroy the communicator and free the buffers (after a finished step)."""
        ...


class NetTransport(Protocol):
    """Makes the NCCL id (rank 0) and the communicator (both ranks)."""

    def unique_id(self) -> bytes:
        ...

    def connect(self, uid: bytes, rank: int) -> PairComm:
        """ncclCommInitRank(2, uid, rank): blocks until the other rank connects."""
        ...


@dataclass(frozen=True)
class NetOptions:
    nbytes: int = 256 << 20  # per direction per iteration: past NCCL's pipeline fill
    warmup: int = 5
    iters: int = 20
    connect_limit_s: float = 120.0  # the other rank starts its process, loads CUDA and NCCL
    step_limit_s: float = 60.0  # 20 x 256 MiB takes ~0.1 s at 400 Gb/s: a stall, not a slow link

    def __post_init__(self) -> None:
        if self.nbytes < 1 or self.warmup < 0 or self.iters < 1:
            raise ValueError(f"net_write needs nbytes >= 1, warmup >= 0, iters >= 1: {self}")


@dataclass(frozen=True)
class Pacer:
    """The clock deadlines are read from, and how to wait: real time unless a test says."""

    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep


DEFAULT_OPTIONS = NetOptions()
REAL_TIME = Pacer()


def encode_id(uid: bytes) -> str:
    return base64.b64encode(uid).decode("ascii")


def decode_id(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except ValueError as exc:
        raise TransferError(f"the NCCL id handed over is not base64: {exc}") from exc


def measure_pair(transport: NetTransport, uid: bytes, rank: int,
                 options: NetOptions = DEFAULT_OPTIONS, pacer: Pacer = REAL_TIME) -> float:
    """This rank's part of one `net_write`: bytes/s each way (see the module's docstring).
    Both ranks call it with the same `uid`; each gets its own stream's figure."""
    comm = _connect(transport, uid, rank, options, pacer)
    try:
        if options.warmup:
            _finish(comm.exchange(options.nbytes, options.warmup), "warm-up", options, pacer)
        timed = comm.exchange(options.nbytes, options.iters)
        _finish(timed, "timed iterations", options, pacer)
    except BaseException:
        with contextlib.suppress(PeerwatchProbeError):  # the step's error is the one to tell
            comm.abort()  # a stalled or failed step: stop what is queued, free the communicator
        raise
    try:
        comm.check()
        seconds = timed.seconds()
    finally:
        comm.close()
    if seconds <= 0:
        raise TransferError(f"rank {rank}: the timed iterations took {seconds} s of device time")
    return options.nbytes * options.iters / seconds


def _connect(transport: NetTransport, uid: bytes, rank: int, options: NetOptions,
             pacer: Pacer) -> PairComm:
    """The communicator, made in a daemon thread (ncclCommInitRank blocks until the other
    rank connects, and releases the GIL): past the limit it is left there, never joined."""
    made: list[PairComm] = []
    failed: list[BaseException] = []
    ready = threading.Event()

    def init() -> None:
        try:
            made.append(transport.connect(uid, rank))
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
            failed.append(exc)
        finally:
            ready.set()

    threading.Thread(target=init, name=f"nccl-init-rank{rank}", daemon=True).start()
    deadline = pacer.clock() + options.connect_limit_s
    while not ready.is_set():
        if pacer.clock() > deadline:
            raise TransferTimeout(f"rank {rank}: the other rank did not connect within "
                                  f"{options.connect_limit_s:g} s (NCCL init abandoned)")
        pacer.sleep(POLL_S)
    if failed:
        exc = failed[0]
        if isinstance(exc, PeerwatchProbeError):
            raise exc
        raise TransferError(f"rank {rank}: NCCL init: {type(exc).__name__}: {exc}") from exc
    return made[0]


def _finish(step: Step, what: str, options: NetOptions, pacer: Pacer) -> None:
    """Wait for `step`, at most `step_limit_s` (its async errors raise from `done`)."""
    deadline = pacer.clock() + options.step_limit_s
    while not step.done():
        if pacer.clock() > deadline:
            raise TransferTimeout(f"{what} did not finish within {options.step_limit_s:g} s "
                                  "(the other rank or the network stopped): aborted")
        pacer.sleep(POLL_S)
