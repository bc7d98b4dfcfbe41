"""All-to-all on the real GPUs: every GPU sends one buffer to every other at once.

Used only by probes/nvidia/transfers.py, which hands in its `Transfers` (and through it CuPy
and NCCL): this module never imports cupy itself. Two ways, the same figure per GPU (what it
sent to its peers, (peers x buffer x copies) over its own timed window):
- `a2a_ce`: copy engines; each GPU pushes to every peer on its own stream (P2P where the
  pair allows it, else the driver stages it), all GPUs at once: nvbandwidth's
  all_to_all_memcpy_ce pattern, the MoE token-routing pattern;
- `a2a_nccl`: NCCL all-to-all. CuPy's NCCL has no alltoall call, so it is grouped send/recv
  (ncclGroupStart, a send and a recv per peer per rank, ncclGroupEnd), which is how NCCL's
  own alltoall is built.
Each GPU's window starts from the test's common start event and ends on its own stream once
its part is done, so a GPU whose paths are slow shows a lower figure than the others. The
data are verified on the receiving GPUs after the timed copies. A GPU that hangs the
all-to-all (a dead GPU, NVIDIA/nccl#1531) is cut by `Run`'s deadline (`TransferTimeout`)
and the sweep fails every GPU's result with the same words.
"""

from __future__ import annotations

import secrets
from typing import Any

from peerwatch.probes.fabric import Measurement, TestSpec
from peerwatch.probes.nvidia.transfer_run import Buffer, Run, Window

Pair = tuple[int, int]


def timed_each(run: Run, one: Any, count: int) -> dict[int, Window]:
    """`count` repetitions of `one`, each device timed on its own stream from a common start."""
    start = run.event(run.main, timing=True)
    start.record(run.stream(run.main))
    starts = {}
    for d in run.devices:
        if d != run.main:
            run.stream(d).wait_event(start)
        ev = run.event(d, timing=True)
        ev.record(run.stream(d))
        starts[d] = ev
    run.repeat(one, count)
    out = {}
    for d in run.devices:
        stop = run.event(d, timing=True)
        stop.record(run.stream(d))
        out[d] = (starts[d], stop)
    run.barrier()
    return out


def measure_all_to_all(tr: Any, spec: TestSpec, nccl: Any = None) -> Measurement:
    """One all-to-all over `spec.gpus`; with `nccl` (CuPy's module and communicators, from
    transfers.py) through NCCL, else by copy engines."""
    gpus, n = list(spec.gpus), spec.bytes_per_copy
    flows = [(a, b) for a in gpus for b in gpus if a != b]
    if nccl is None:
        for a, b in flows:
            tr.enable_peer(a, b, required=False)
    with Run(tr, gpus) as run:
        send: dict[Pair, Buffer] = {f: run.alloc(f[0], n) for f in flows}
        recv: dict[Pair, Buffer] = {f: run.alloc(f[1], n) for f in flows}
        seeds = {f: secrets.randbits(31) | 1 for f in flows}
        step = (_nccl_step(tr, nccl, gpus, send, recv, n) if nccl is not None
                else _ce_step(tr, flows, send, recv, n))
        run.begin()
        for f in flows:
            run.fill(send[f], n, seeds[f])
            run.poison(recv[f], n)
        run.barrier()
        run.repeat(step, spec.warmup)
        windows = [timed_each(run, step, spec.copies) for _ in range(spec.samples)]
        for f in flows:
            run.check(recv[f], n, seeds[f])
        gpu_s = run.end()
        moved = (len(gpus) - 1) * n * spec.copies
        per_gpu = {g: [moved / run.seconds(w[g]) for w in windows] for g in gpus}
        slowest = min(gpus, key=lambda g: sorted(per_gpu[g])[len(windows) // 2])
        total = (spec.warmup + spec.copies * spec.samples) * (len(gpus) - 1) * n
        return Measurement(samples=per_gpu[slowest], gpu_time_s=gpu_s,
                           device_memory_bytes=run.peak_bytes()
                           + (max(nccl[2].values()) if nccl is not None else 0),
                           verified=run.bad_words() == 0,
                           wire_bytes=dict.fromkeys(gpus, total), per_gpu=per_gpu)


def _ce_step(tr: Any, flows: list[Pair], send: dict[Pair, Buffer],
             recv: dict[Pair, Buffer], n: int) -> Any:
    """Every flow's copy, pushed by its sender on the sender's stream."""
    def one() -> None:
        for f in flows:
            a, b = f
            with tr.device(a):
                tr.rt.memcpyPeerAsync(recv[f][1], b, send[f][1], a, n, tr.stream(a).ptr)
    return one


def _nccl_step(tr: Any, nccl: Any, gpus: list[int], send: dict[Pair, Buffer],
               recv: dict[Pair, Buffer], n: int) -> Any:
    """One NCCL all-to-all: in one group, each rank sends to and receives from every peer."""
    module, comms, _ = nccl
    rank = {g: r for r, g in enumerate(gpus)}

    def one() -> None:
        module.groupStart()
        for comm, g in zip(comms, gpus, strict=True):
            stream = tr.stream(g).ptr
            with tr.device(g):
                for p in gpus:
                    if p == g:
                        continue
                    comm.send(send[(g, p)][1], n, module.NCCL_CHAR, rank[p], stream)
                    comm.recv(recv[(p, g)][1], n, module.NCCL_CHAR, rank[p], stream)
        module.groupEnd()
    return one
