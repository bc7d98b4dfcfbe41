"""One simulated transfer test: its value, duration, memory and the bytes it put on NVLink.

`model_run` is a pure function of the wiring (`SimTopology`), the test and the active faults.
The fabric adds noise and books the bytes (`Run.flows`) on the link counters; foreign jobs
(`Contention` faults) book theirs for the same window, which is how the sweep later finds
them by reading the counters around the test, exactly as it would on a real host.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from peerwatch.probes.fabric import TestSpec
from peerwatch.probes.report import TestName
from peerwatch.probes.sim import simalltoall
from peerwatch.probes.sim.faults import (
    BandwidthFactor,
    BusyGpu,
    Contention,
    Fault,
    HostCopySlow,
    ThrottledGpu,
)
from peerwatch.probes.sim.presets import load_calibration
from peerwatch.probes.sim.simperf import PerfModel, best_ring
from peerwatch.probes.sim.simtopo import SimTopology
from peerwatch.probes.test_kinds import kind_of

LATENCY_LOAD_BYTES = 64  # bytes one dependent peer load brings back over the link
Flow = tuple[int, int, float]  # sender, receiver, bytes


@dataclass
class Run:
    value: float  # bytes/s (total of both ways for ce_bidir, bus bandwidth for allreduce) or s
    duration_s: float  # GPU time of the whole test, warm-up included
    memory_bytes: int  # peak device memory on any one GPU
    flows: list[Flow] = field(default_factory=list)
    contended_by: set[Contention] = field(default_factory=set)
    per_gpu: dict[int, float] = field(default_factory=dict)  # a joint test's (all-to-all)


_perf: PerfModel | None = None


def perf() -> PerfModel:
    global _perf
    if _perf is None:
        _perf = PerfModel(load_calibration())
    return _perf


def contention_capacity(topo: SimTopology, c: Contention) -> float:
    """Bytes/s the foreign job's NVLinks can carry at CE efficiency (0: it has none)."""
    links = len(topo.links_toward(c.gpu, c.peer))
    return links * topo.link_bps * perf().nvlink_eff[TestName.CE_WRITE]


def contention_rate(topo: SimTopology, c: Contention, *, shared: bool) -> float:
    """Bytes/s a foreign job gets: its demand, capped by its links (half when sharing them)."""
    cap = contention_capacity(topo, c)
    demand = cap if c.bytes_per_s is None else c.bytes_per_s
    return min(demand, cap / 2 if shared else cap)


def _shares(topo: SimTopology, c: Contention, sender: int, receiver: int) -> bool:
    """Does a foreign job's traffic use the ports a sender -> receiver copy uses?"""
    def ids(gpu: int, peer: int | None) -> set[int]:
        return {p.link for p in topo.links_toward(gpu, peer)}

    if sender == c.gpu and ids(sender, receiver) & ids(c.gpu, c.peer):
        return True
    return receiver == c.peer and bool(ids(receiver, sender) & ids(receiver, c.gpu))


class _Hop:
    """Bandwidth of one directed hop under the faults: factor, foreign jobs, busy GPUs."""

    def __init__(self, topo: SimTopology, faults: list[Fault]) -> None:
        self.topo = topo
        self.faults = faults
        self.contended_by: set[Contention] = set()

    def factor(self, src: int, dst: int, *, nvlink_or_p2p: bool) -> float:
        f = 1.0
        for fault in self.faults:
            if isinstance(fault, BusyGpu) and fault.gpu in (src, dst):
                f *= fault.slowdown
            if isinstance(fault, ThrottledGpu) and fault.gpu in (src, dst):
                f *= fault.factor
            if not nvlink_or_p2p:
                continue
            if isinstance(fault, BandwidthFactor) and (
                (fault.src, fault.dst) == (src, dst)
                or (fault.both_directions and (fault.dst, fault.src) == (src, dst))
            ):
                f *= fault.factor
            if isinstance(fault, Contention) and _shares(self.topo, fault, src, dst):
                cap = contention_capacity(self.topo, fault)
                demand = cap if fault.bytes_per_s is None else fault.bytes_per_s
                probe_cap = self.topo.route(src, dst).raw_bps * perf().nvlink_eff[
                    TestName.CE_WRITE]
                f *= max(0.5, 1 - demand / probe_cap) if probe_cap else 1.0
                self.contended_by.add(fault)
        return f


def model_run(topo: SimTopology, spec: TestSpec, faults: list[Fault]) -> Run:
    hop = _Hop(topo, faults)
    model = kind_of(spec.test).sim.model
    if model == "allreduce":
        run = _allreduce(topo, spec, hop)
    elif model == "all_to_all":
        run = _all_to_all(topo, spec, hop)
    elif model == "latency":
        run = _latency(topo, spec, hop)
    elif model in ("host_copy", "local_copy"):
        run = _gpu_copy(topo, spec, hop)
    else:
        run = _bandwidth(topo, spec, hop)
    run.contended_by = hop.contended_by
    return run


def _bandwidth(topo: SimTopology, spec: TestSpec, hop: _Hop) -> Run:
    assert spec.src is not None and spec.dst is not None
    src, dst, nbytes = spec.src, spec.dst, spec.bytes_per_copy
    route = topo.route(src, dst)
    kind = kind_of(spec.test)
    over_p2p = kind.sim.model != "staged" and route.kind != "staged"
    bidir = kind.sim.ways == 2
    factor = hop.factor(src, dst, nvlink_or_p2p=over_p2p)
    if bidir:
        factor = (factor + hop.factor(dst, src, nvlink_or_p2p=over_p2p)) / 2
    value = perf().bandwidth(spec.test, route, nbytes) * factor
    per_direction = float(nbytes * (spec.copies * spec.samples + spec.warmup))
    directions = 2 if bidir else 1
    flows: list[Flow] = []
    if over_p2p and route.kind == "nvlink":
        flows = [(src, dst, per_direction)] + ([(dst, src, per_direction)] if bidir else [])
    return Run(value, per_direction * directions / value, nbytes * directions, flows)


def _gpu_copy(topo: SimTopology, spec: TestSpec, hop: _Hop) -> Run:
    """h2d, d2h or local on one GPU: no NVLink traffic, so no flows."""
    assert spec.src is not None
    gpu, nbytes = spec.src, spec.bytes_per_copy
    value = perf().gpu_copy(spec.test, topo.pcie_bps(gpu), nbytes) * hop.factor(
        gpu, gpu, nvlink_or_p2p=False)
    local = kind_of(spec.test).sim.model == "local_copy"
    if not local:
        for f in hop.faults:
            if isinstance(f, HostCopySlow) and f.gpu == gpu:
                value *= f.factor
    moved = float(nbytes * (spec.copies * spec.samples + spec.warmup))
    return Run(value, moved / value, nbytes * (2 if local else 1))


def _latency(topo: SimTopology, spec: TestSpec, hop: _Hop) -> Run:
    assert spec.src is not None and spec.dst is not None
    src, dst = spec.src, spec.dst
    route = topo.route(src, dst)
    # A pointer chase slows on a busy GPU and queues behind foreign traffic on its links,
    # but a link delivering less bandwidth (BandwidthFactor) does not lengthen one round trip.
    per_load = perf().latency(route)
    for f in hop.faults:
        if isinstance(f, BusyGpu) and f.gpu in (src, dst):
            per_load /= f.slowdown
        elif isinstance(f, Contention) and route.kind == "nvlink" and (
                _shares(topo, f, src, dst) or _shares(topo, f, dst, src)):
            per_load *= 1.5
            hop.contended_by.add(f)
    loads = spec.copies * spec.samples + spec.warmup
    flows: list[Flow] = []
    if route.kind == "nvlink":
        flows = [(spec.dst, spec.src, float(loads * LATENCY_LOAD_BYTES))]
    return Run(per_load, per_load * loads, spec.bytes_per_copy, flows)


def _allreduce(topo: SimTopology, spec: TestSpec, hop: _Hop) -> Run:
    n, nbytes = len(spec.gpus), spec.bytes_per_copy
    cache: dict[tuple[int, int], float] = {}

    def hop_bps(a: int, b: int) -> float:
        if (a, b) not in cache:
            route = topo.route(a, b)
            cache[(a, b)] = perf().bandwidth(TestName.CE_WRITE, route, 1 << 30) * hop.factor(
                a, b, nvlink_or_p2p=route.kind != "staged")
        return cache[(a, b)]

    ring, slowest = best_ring(list(spec.gpus), hop_bps)
    busbw = perf().allreduce_busbw(slowest, nbytes)
    algbw = busbw * n / (2 * (n - 1))
    iterations = spec.copies * spec.samples + spec.warmup
    sent = 2 * (n - 1) / n * nbytes * iterations  # what each GPU sends to its ring successor
    flows: list[Flow] = [
        (a, b, sent)
        for a, b in zip(ring, ring[1:] + ring[:1], strict=True)
        if topo.route(a, b).kind == "nvlink"
    ]
    return Run(busbw, iterations * nbytes / algbw, 2 * nbytes, flows)


def _all_to_all(topo: SimTopology, spec: TestSpec, hop: _Hop) -> Run:
    """Every GPU of `spec.gpus` to every other at once (`simalltoall.py`)."""
    factor = {(a, b): hop.factor(a, b, nvlink_or_p2p=topo.route(a, b).kind != "staged")
              for a in spec.gpus for b in spec.gpus if a != b}
    rates = simalltoall.flow_rates(topo, spec, factor)
    both = kind_of(spec.test).sim.both_ends  # NCCL's kernel waits for its receives too
    figures = simalltoall.per_gpu(spec, rates, both_ends=both)
    n, c = len(spec.gpus), spec.bytes_per_copy
    iterations = spec.copies * spec.samples + spec.warmup
    seconds = max((n - 1) * c / v for v in figures.values() if v > 0) * iterations
    return Run(min(figures.values()), seconds, 2 * (n - 1) * c,
               simalltoall.wire_flows(topo, spec), per_gpu=figures)
