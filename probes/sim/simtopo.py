"""The simulated machine's wiring, as the current faults leave it.

`SimTopology` answers the structural questions of the fabric: which NVLink port reaches what,
which ports are up, how wide a pair's NVLink is, what PCIe generation and width each GPU
trained at, which P2P routes are allowed and which route a copy between two GPUs takes.
It is rebuilt whenever the faults change, so every answer is a pure function of
(preset, faults): NVML-style views and measured bandwidth can never disagree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from peerwatch.probes.report import P2PCap, P2PStatus, PairInfo, PathLevel
from peerwatch.probes.sim.faults import (
    Fault,
    InsufficientNvlinks,
    LinksDown,
    NvSwitchLost,
    P2PDisabled,
    PcieDowntrained,
    SwitchTrayLost,
)
from peerwatch.probes.sim.presets import Calibration, Preset

RouteKind = Literal["nvlink", "pcie", "staged"]


@dataclass(frozen=True)
class Port:
    """One NVLink port: `remote` is the peer GPU on a direct mesh, None behind a switch."""

    gpu: int
    link: int
    remote: int | None
    remote_link: int | None
    up: bool
    wired: bool = True  # False: a port the SKU leaves unconnected (reported down)


@dataclass(frozen=True)
class Route:
    """How data goes from one GPU to another, and the raw per-direction rate of that path."""

    kind: RouteKind
    raw_bps: float  # NVLink width x link rate, or the slower GPU's PCIe rate
    pcie_bps: float  # the slower GPU's PCIe rate (what host staging runs at)
    pcie_path: PathLevel


class SimTopology:
    def __init__(self, preset: Preset, cal: Calibration, faults: tuple[Fault, ...]) -> None:
        self.preset = preset
        self.cal = cal
        self.count = len(preset.gpus)
        self.ports: dict[int, list[Port]] = self._ports(faults)
        self.pcie_now = self._pcie(faults)
        self.p2p_off = {frozenset((f.a, f.b)) for f in faults if isinstance(f, P2PDisabled)}

    # ------------------------------------------------------------------ NVLink

    def _wiring(self) -> dict[int, list[tuple[int | None, int | None]]]:
        """(remote gpu, remote link) per port of every GPU, before any fault."""
        nv = self.preset.nvlink
        wires: dict[int, list[tuple[int | None, int | None]]] = {g: [] for g in range(self.count)}
        if nv.fabric == "nvswitch":
            for g in wires:
                wires[g] = [(None, None)] * nv.links_per_gpu
        elif nv.fabric == "direct":
            for a, b in nv.pairs:
                for _ in range(nv.links_per_pair):
                    la, lb = len(wires[a]), len(wires[b])
                    wires[a].append((b, lb))
                    wires[b].append((a, la))
        return wires

    def _unwired(self, gpu: int, wired: int) -> list[Port]:
        extra = self.preset.nvlink.unwired_ports if self.preset.nvlink.fabric != "none" else 0
        return [Port(gpu, wired + i, None, None, False, wired=False) for i in range(extra)]

    def _rack_ports_down(self, faults: tuple[Fault, ...], links: int) -> set[tuple[int, int]]:
        """(gpu, link) ports a lost switch (tray) or an under-trained GPU takes down."""
        down: set[tuple[int, int]] = set()
        per_tray = self.preset.rack.ports_per_switch_tray if self.preset.rack else 0
        for f in faults:
            if isinstance(f, SwitchTrayLost):
                lost = range(f.tray * per_tray, (f.tray + 1) * per_tray)
                down.update((g, k) for g in range(self.count) for k in lost)
            elif isinstance(f, NvSwitchLost):
                down.update((g, k) for g in range(self.count) for k in f.links if k < links)
            elif isinstance(f, InsufficientNvlinks):
                down.update((f.gpu, k) for k in range(max(0, links - f.links_down), links))
        return down

    def _ports(self, faults: tuple[Fault, ...]) -> dict[int, list[Port]]:
        wires = self._wiring()
        down = self._rack_ports_down(faults, len(wires[0]) if wires else 0)
        for f in faults:
            if isinstance(f, LinksDown):
                n = len(wires[f.gpu])
                picked = f.links or tuple(range(max(0, n - f.count), n))
                for link in picked:
                    if 0 <= link < n:
                        down.add((f.gpu, link))
                        remote, remote_link = wires[f.gpu][link]
                        if remote is not None and remote_link is not None:
                            down.add((remote, remote_link))  # a cable has two ends
        return {
            g: [Port(g, i, r, rl, (g, i) not in down) for i, (r, rl) in enumerate(ws)]
            + self._unwired(g, len(ws))
            for g, ws in wires.items()
        }

    def active(self, gpu: int) -> list[Port]:
        return [p for p in self.ports[gpu] if p.up]

    def links_toward(self, gpu: int, peer: int | None) -> list[Port]:
        """Active ports of `gpu` that carry traffic to `peer` (all of them behind a switch)."""
        if self.preset.nvlink.fabric == "nvswitch" or peer is None:
            return self.active(gpu)
        return [p for p in self.active(gpu) if p.remote == peer]

    def nvlink_width(self, a: int, b: int) -> int:
        if self.preset.nvlink.fabric == "nvswitch":
            return min(len(self.active(a)), len(self.active(b)))
        return len(self.links_toward(a, b))

    @property
    def link_bps(self) -> float:
        return self.preset.nvlink.speed_GBps * 1e9

    # ------------------------------------------------------------------ PCIe

    def _pcie(self, faults: tuple[Fault, ...]) -> dict[int, tuple[int, int]]:
        pc = self.preset.pcie
        now = {g: (pc.gen, pc.width) for g in range(self.count)}
        for f in faults:
            if isinstance(f, PcieDowntrained):
                gen = f.gen if f.gen is not None else pc.gen
                width = f.width if f.width is not None else (
                    pc.width if f.gen is not None else max(1, pc.width // 2))
                now[f.gpu] = (min(gen, pc.gen), min(width, pc.width))
        return now

    def pcie_bps(self, gpu: int) -> float:
        gen, width = self.pcie_now[gpu]
        return self.cal.pcie_lane_GBps.get(gen, max(self.cal.pcie_lane_GBps.values())) * 1e9 * width

    def same_socket(self, a: int, b: int) -> bool:
        return self.preset.gpus[a].socket == self.preset.gpus[b].socket

    def pcie_path(self, a: int, b: int) -> PathLevel:
        pc = self.preset.pcie
        return pc.path_same_socket if self.same_socket(a, b) else pc.path_cross_socket

    # ------------------------------------------------------------------ P2P and routes

    def pcie_p2p(self, a: int, b: int) -> P2PStatus:
        pc = self.preset.pcie
        return pc.p2p_same_socket if self.same_socket(a, b) else pc.p2p_cross_socket

    def p2p(self, a: int, b: int) -> dict[P2PCap, P2PStatus]:
        if frozenset((a, b)) in self.p2p_off:
            return dict.fromkeys(P2PCap, P2PStatus.DISABLED_BY_REGKEY)
        pci = self.pcie_p2p(a, b)
        if self.nvlink_width(a, b):
            ok = P2PStatus.OK
            return {P2PCap.READ: ok, P2PCap.WRITE: ok, P2PCap.NVLINK: ok, P2PCap.ATOMICS: ok,
                    P2PCap.PCI: pci}
        return {P2PCap.READ: pci, P2PCap.WRITE: pci, P2PCap.NVLINK: P2PStatus.NOT_SUPPORTED,
                P2PCap.ATOMICS: pci, P2PCap.PCI: pci}

    def can_access_peer(self, a: int, b: int) -> bool:
        caps = self.p2p(a, b)
        return caps[P2PCap.READ] is P2PStatus.OK and caps[P2PCap.WRITE] is P2PStatus.OK

    def route(self, src: int, dst: int) -> Route:
        pcie = min(self.pcie_bps(src), self.pcie_bps(dst))
        path = self.pcie_path(src, dst)
        if not self.can_access_peer(src, dst):
            return Route("staged", pcie, pcie, path)
        width = self.nvlink_width(src, dst)
        if width:
            return Route("nvlink", width * self.link_bps, pcie, path)
        return Route("pcie", pcie, pcie, path)

    def pair_info(self, src: int, dst: int) -> PairInfo:
        width = self.nvlink_width(src, dst)
        path = self.pcie_path(src, dst)
        return PairInfo(
            src=src, dst=dst, topology=f"NV{width}" if width else path.value, pcie_path=path,
            nvlink_width=width, via_nvswitch=self.preset.nvlink.fabric == "nvswitch" and width > 0,
            p2p=self.p2p(src, dst), can_access_peer=self.can_access_peer(src, dst),
        )
