"""What one GPU should send in an all-to-all over its host's GPUs, from topology alone.

An all-to-all (MoE token routing) has every GPU send one buffer to every other at once, so
a GPU's figure (what it sent to its peers per second) is set by its slowest flow, and each
flow by the links it shares:
- behind NVSwitch a GPU's ports carry all its flows: each gets the pair's NVLink width x
  link rate x efficiency / (flows sharing the ports), so the GPU still sends at near its
  full NVLink bandwidth;
- on a direct NVLink mesh each pair's own links carry its flow alone: the GPU sends
  (peers) x the slowest pair's rate;
- over PCIe (or staged through host memory where P2P is off) a GPU's one link carries all
  its PCIe flows each way: contended, so the GPU gets its link's rate, split among them.
The probe's simulator (`probes/sim/simalltoall.py`) runs the same model, so a healthy
simulated host measures what this expects; the efficiencies are the kind's `expect` row.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from peerwatch.app.analysis.expected import DEFAULT_NVLINK_SPEED_BPS, Expectation, pcie_bps
from peerwatch.probes.report import GpuInfo, PairInfo, TestName, unit_of
from peerwatch.probes.test_kinds import kind_of

Path = Literal["nvswitch", "direct", "pcie", "staged"]


@dataclass(frozen=True)
class A2AFlow:
    """One directed flow of the all-to-all: its path and the raw per-direction rates."""

    src: int
    dst: int
    path: Path
    nvlink_bps: float  # width x link rate (0 off NVLink)
    src_pcie_bps: float | None
    dst_pcie_bps: float | None


def _resource(f: A2AFlow) -> str:
    return "pcie" if f.path in ("pcie", "staged") else f.path


def flow_rate(test: TestName, f: A2AFlow, out_count: Counter[tuple[int, str]],
              in_count: Counter[tuple[int, str]]) -> float | None:
    """Bytes/s a healthy flow gets with its shared links split; None where unknowable."""
    e = kind_of(test).expect
    res = _resource(f)
    if f.path == "direct":
        return f.nvlink_bps * (e.nvlink or 0.0)
    if f.path == "nvswitch":
        # The pair's width is the smaller port count of the two GPUs: the port bundle
        # each end shares among its flows.
        eff = e.nvlink or 0.0
        return f.nvlink_bps * eff / max(out_count[(f.src, res)], in_count[(f.dst, res)])
    if f.src_pcie_bps is None or f.dst_pcie_bps is None:
        return None
    eff = (e.pcie or 0.0) if f.path == "pcie" else e.staged
    return min(f.src_pcie_bps * eff / out_count[(f.src, res)],
               f.dst_pcie_bps * eff / in_count[(f.dst, res)])


def expected_all_to_all(test: TestName, gpu: int, flows: list[A2AFlow]) -> Expectation | None:
    """What `gpu` should send per second in an all-to-all made of `flows` (every ordered
    pair of the host's GPUs), or None when a flow's rate is unknowable."""
    gpus = {f.src for f in flows} | {f.dst for f in flows}
    if gpu not in gpus or len(gpus) < 2:
        return None
    out_count: Counter[tuple[int, str]] = Counter((f.src, _resource(f)) for f in flows)
    in_count: Counter[tuple[int, str]] = Counter((f.dst, _resource(f)) for f in flows)
    both = kind_of(test).sim.both_ends
    mine = [f for f in flows if f.src == gpu or (both and f.dst == gpu)]
    rates = [(flow_rate(test, f, out_count, in_count), f) for f in mine]
    if any(r is None for r, _ in rates):
        return None
    rate, slowest = min((((r or 0.0), f) for r, f in rates), key=lambda t: t[0])
    peers = len(gpus) - 1
    return Expectation(peers * rate, unit_of(test), _basis(test, slowest, peers, rate))


def _basis(test: TestName, f: A2AFlow, peers: int, rate: float) -> str:
    e = kind_of(test).expect
    where = {"nvswitch": f"NVSwitch, {f.nvlink_bps / 1e9:.1f} GB/s ports x {e.nvlink:.2f} "
                         "shared by its flows",
             "direct": f"direct NVLink {f.nvlink_bps / 1e9:.1f} GB/s x {e.nvlink:.2f} per pair",
             "pcie": f"PCIe x {e.pcie:.2f}, one link shared by its flows",
             "staged": f"staged through host x {e.staged:.2f}, one link shared"}[f.path]
    return (f"all-to-all to {peers} peers at once: {peers} x {rate / 1e9:.1f} GB/s, the "
            f"slowest flow GPU{f.src}->GPU{f.dst} ({where})")


def flows_of(pairs: dict[tuple[int, int], PairInfo], gpus: dict[int, GpuInfo],
             speed_bps: Callable[[int, int], float | None]) -> list[A2AFlow]:
    """The all-to-all's flows over a host's pairs as they are now (the CLI's `bench`; the
    server's judgement also works out the full-width ones, `records/fabric.py`)."""
    out = []
    for (a, b), p in pairs.items():
        if a not in gpus or b not in gpus:
            continue
        path: Path = ("staged" if p.can_access_peer is False else
                      ("nvswitch" if p.via_nvswitch else "direct") if p.nvlink_width else "pcie")
        speed = speed_bps(a, b) or DEFAULT_NVLINK_SPEED_BPS
        out.append(A2AFlow(a, b, path, p.nvlink_width * speed, pcie_bps(gpus[a]),
                           pcie_bps(gpus[b])))
    return out
