"""Faults a simulated fabric can suffer: small frozen dataclasses, one per kind of trouble.

Give them to `SimulatedFabric(..., faults=[...])` or, while it runs, to `fabric.inject(...)`;
take them away with `fabric.clear(fault)` (or `fabric.clear()` for all). GPU indices are
checked against the preset when a fault goes in, so a typo fails at once.

    LinksDown(gpu=3, count=6)                 6 of GPU 3's NVLinks go down: NV18 -> NV12
    BandwidthFactor(src=0, dst=1, factor=.6)  the 0<->1 path delivers 60% (both ways by default)
    ErrorGrowth(gpu=2, link=5, counter="replay", per_second=0.5)
                                              an error counter grows on the fabric's clock
    P2PDisabled(a=1, b=2)                     P2P off between 1 and 2: copies go through host
    Contention(gpu=0, peer=1)                 a foreign job copies 0 -> 1 at full speed
    TransferFails(gpu=4)                      every test touching GPU 4 raises TransferError
    TransferHangs(gpu=5)                      a test touching GPU 5 blocks until released
    PcieDowntrained(gpu=6, gen=4, width=8)    PCIe trained below its maximum
    HostCopySlow(gpu=6, factor=0.4)           host <-> GPU copies slow, the link trained fully
    BusyGpu(gpu=7)                            a job runs there: processes, utilisation, memory
    FabricNotCompleted(state="in_progress")   NVSwitch fabric registration not COMPLETED
    FabricStatusError(status="unknown")       registration COMPLETED with an error status
    FabricUnhealthy(issues=("route_unhealthy",))  fabric health summary/mask report trouble
    FabricManagerDown()                       no nv-fabricmanager process (fabric unchanged)
    PeerCopiesFail(a=0, b=1)                  links up, fabric COMPLETED, P2P copies fail
    DriverRestarted()                         the driver was (re)loaded now: links settle
    GpuLost(gpu=4)                            GPU 4 fell off the bus (Xid 79): NVML says lost,
                                              PCI still lists it (on_pci=False: gone there too)
    SwitchTrayLost(tray=4)                    rack presets: NVLink switch tray 4 is gone, every
                                              GPU loses the ports to it (2 of 18 on NVL72)
    NvSwitchLost(switch=0, links=(2, 3))      the host's NVSwitch 0 fails (fatal SXid): links
                                              2 and 3 of every GPU go down, limited capacity
    InsufficientNvlinks(gpu=2)                GPU 2 trained too few NVLinks to join the fabric
    CliqueMoved(clique_id=2)                  this tray sits in another clique than its rack
    LinkXid(gpu=3, link=5, every_s=120)       GPU 3's NVLink 5 logs Xid 74 every 2 min, stays up
    SwitchSxid(switch=0, sxid=12028)          the host's NVSwitch 0 logs a (non-fatal) SXid
    ThrottledGpu(gpu=3, reason="power")       GPU 3 held below its clocks (power cap, thermal,
                                              HW slowdown): NVML's reasons say so, tests slow
    AcsRedirect(bridge="0000:17:00.0")        ACS P2P redirect on a PCIe bridge above a GPU
    PeermemMissing()                          no nvidia_peermem (nor dma-buf): RDMA not ready
    GpuRecoveryAction, RowRemapPending, RowRemapFailed, AerGrowth
                                              the driver's own verdicts (driver_faults.py)
    NicPortFlapping, NicSymbolErrors, NicPortDown, NicRateDegraded, NicPathSys
                                              the host's RDMA NICs (nic_faults.py)

Each fault changes what NVML would report *and* what the transfer tests measure, consistently:
a downed link shows as state down, a narrower NV#, a lower expected and measured bandwidth.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from peerwatch.probes.report import TestName
from peerwatch.probes.sim.driver_faults import (
    AerGrowth,
    GpuRecoveryAction,
    RowRemapFailed,
    RowRemapPending,
)
from peerwatch.probes.sim.nic_faults import (
    NicPathSys,
    NicPortDown,
    NicPortFlapping,
    NicRateDegraded,
    NicSymbolErrors,
)

ErrorCounter = Literal["replay", "recovery", "crc_flit", "crc_data", "ecc_data"]


@dataclass(frozen=True)
class LinksDown:
    """NVLinks of `gpu` go down: the given `links`, or else the last `count` of them.

    On NVSwitch the GPU's width to every peer shrinks to its remaining active links; on a
    direct mesh the peers those links reached lose them. All links down: the pair falls
    back to PCIe (or host staging where PCIe P2P is not allowed).
    """

    gpu: int
    count: int = 1
    links: tuple[int, ...] = ()


@dataclass(frozen=True)
class BandwidthFactor:
    """The src -> dst path delivers `factor` of its healthy bandwidth (a degraded link)."""

    src: int
    dst: int
    factor: float
    both_directions: bool = True

    def __post_init__(self) -> None:
        if not 0 < self.factor <= 1:
            raise ValueError(f"bandwidth factor must be in (0, 1], got {self.factor}")


@dataclass(frozen=True)
class ErrorGrowth:
    """One NVLink error counter of `gpu`/`link` grows by `per_second` on the fabric's clock.

    Counting starts when the fault goes in; clearing it keeps what was counted (lifetime
    counters never go down).
    """

    gpu: int
    link: int = 0
    counter: ErrorCounter = "crc_data"
    per_second: float = 1.0


@dataclass(frozen=True)
class P2PDisabled:
    """P2P turned off between `a` and `b` (both directions), as a driver regkey would.

    NVML reports every P2P capability as disabled_by_regkey, cudaDeviceCanAccessPeer is
    False, and the pair's tests run at host-staged speed.
    """

    a: int
    b: int


@dataclass(frozen=True)
class Contention:
    """A foreign job sends from `gpu` (to `peer`, or to the switch) at `bytes_per_s`.

    None means as fast as the link goes. Link TX/RX counters grow by its bytes all the time
    (on the fabric's clock) and during every test window; a test sharing those links gets
    its share of the bandwidth (at least half, as two fair copy streams would).
    """

    gpu: int
    peer: int | None = None
    bytes_per_s: float | None = None


@dataclass(frozen=True)
class TransferFails:
    """Tests touching `gpu` (only `test`, if given) raise TransferError with `message`."""

    gpu: int
    test: TestName | None = None
    message: str = "CUDA error: an illegal memory access was encountered (simulated)"


@dataclass(frozen=True)
class TransferHangs:
    """Tests touching `gpu` (any GPU if None; only `test`, if given) block.

    They wait until `fabric.release_hangs()` or `seconds` have passed, then raise
    TransferError: a hung transfer never yields a measurement.
    """

    gpu: int | None = None
    test: TestName | None = None
    seconds: float = 3600.0


@dataclass(frozen=True)
class PcieDowntrained:
    """GPU's PCIe link trained below its maximum; None halves the width and keeps the gen."""

    gpu: int
    gen: int | None = None
    width: int | None = None


@dataclass(frozen=True)
class HostCopySlow:
    """GPU's host <-> GPU copies (h2d, d2h) deliver `factor` of normal while NVML shows its
    PCIe link trained at full width and generation: a marginal riser or retimer, an IOMMU
    or a host-side fault that only a measurement shows."""

    gpu: int
    factor: float = 0.4


@dataclass(frozen=True)
class BusyGpu:
    """A job runs on `gpu`: compute processes, utilisation and memory in use.

    The sweep skips such a GPU unless forced; forced tests there run at `slowdown` speed.
    """

    gpu: int
    utilization_pct: float = 97.0
    processes: int = 1
    memory_used_fraction: float = 0.6
    slowdown: float = 0.85


@dataclass(frozen=True)
class FabricNotCompleted:
    """GPU fabric registration stuck before COMPLETED (every GPU when `gpu` is None)."""

    state: Literal["not_started", "in_progress"] = "in_progress"
    gpu: int | None = None


@dataclass(frozen=True)
class FabricStatusError:
    """Registration ended with an NVML error status (named like NVML_ERROR_*, lower case)."""

    status: str = "unknown"
    gpu: int | None = None


@dataclass(frozen=True)
class FabricUnhealthy:
    """The fabric's health summary and mask report trouble (e.g. a route unhealthy)."""

    health: str = "unhealthy"
    issues: tuple[str, ...] = ("route_unhealthy",)
    gpu: int | None = None


@dataclass(frozen=True)
class FabricManagerDown:
    """nv-fabricmanager is not running. The fabric keeps the state it had (COMPLETED stays
    COMPLETED until a GPU reset): this is the fault that hides for weeks."""


@dataclass(frozen=True)
class PeerCopiesFail:
    """Links up and fabric COMPLETED, yet P2P copies between `a` and `b` fail (both ways);
    host-staged copies still work."""

    a: int
    b: int
    message: str = "CUDA error: unspecified launch failure on peer copy (simulated)"


@dataclass(frozen=True)
class DriverRestarted:
    """The NVIDIA driver was (re)loaded when the fault went in: links train, pages settle."""


@dataclass(frozen=True)
class GpuLost:
    """`gpu` fell off the bus (Xid 79): every NVML query of it answers "GPU is lost", so it
    leaves the inventory and no test runs on it. Clearing it is the reset that brings it back.
    It stays listed on the PCI bus (sysfs), as such a GPU usually does; `on_pci=False` models
    one gone from the bus too (then only the agent's seen-since-boot set still names it).
    `still_listed=True` is the moment before: the Xid 79 is logged while NVML still answers
    for the GPU, so the report carrying the event lists it (replace the fault with
    `GpuLost(gpu)` to take the GPU away on the next report)."""

    gpu: int
    on_pci: bool = True
    still_listed: bool = False


@dataclass(frozen=True)
class SwitchTrayLost:
    """NVLink switch tray `tray` of the rack is gone: every GPU loses the ports that went to
    it (links tray*k .. tray*k+k-1, k ports per switch tray: 2 of 18 on NVL72), and the
    fabric health says degraded bandwidth (summary limited capacity). A switch tray serves
    the whole rack, so a scenario injects it on every compute tray of the rack."""

    tray: int


@dataclass(frozen=True)
class NvSwitchLost:
    """The host's NVSwitch `switch` fails (a fatal SXid 20034, its links' LTSSM down): the
    ports of every GPU wired to it (`links`) go down, each logging Xid 74, and the fabric
    health says degraded bandwidth (summary limited capacity). On an HGX board every GPU
    keeps its ports to the other switches: bandwidth reduced, nothing cut off."""

    switch: int = 0
    links: tuple[int, ...] = (2, 3)


@dataclass(frozen=True)
class InsufficientNvlinks:
    """`gpu` trained too few NVLinks to join the fabric: its last `links_down` ports are down
    and the health mask says incorrect configuration, insufficient NVLinks (summary
    unhealthy)."""

    gpu: int
    links_down: int = 10


@dataclass(frozen=True)
class CliqueMoved:
    """Every GPU of this tray registered in clique `clique_id`: another NVLink partition than
    its rack-mates, so no job may span it and them."""

    clique_id: int


@dataclass(frozen=True)
class LinkXid:
    """`gpu`'s NVLink `link` logs Xid 74 when the fault goes in and again every `every_s`
    of the fabric's clock, while NVML still shows it up: a marginal link. Events only
    (`probes/sim/simevents.py`); the link's state and bandwidth are unchanged."""

    gpu: int
    link: int = 0
    every_s: float = 120.0

    def __post_init__(self) -> None:
        if self.every_s <= 0:
            raise ValueError(f"every_s must be positive, got {self.every_s}")


@dataclass(frozen=True)
class SwitchSxid:
    """The host's NVSwitch `switch` logs SXid `sxid` once, when the fault goes in; a
    non-fatal one (the default, 12028) changes nothing else the fabric reports."""

    switch: int = 0
    sxid: int = 12028
    fatal: bool = False
    link: int = 32
@dataclass(frozen=True)
class ThrottledGpu:
    """`gpu` runs held below its clocks: `reason` "power" (software power cap at
    `power_limit_w`), "thermal" (software thermal slowdown near the slowdown threshold) or
    "hw" (HW slowdown). NVML's clocks-event reasons, SM clock, power and temperature say so
    (probes/sim/simclocks.py), its violation counter grows on the fabric's clock, and every
    test touching it runs at `factor` of normal: slow, but not the fabric's doing."""

    gpu: int
    reason: Literal["power", "thermal", "hw"] = "power"
    factor: float = 0.88
    power_limit_w: int = 450

    def __post_init__(self) -> None:
        if not 0 < self.factor <= 1:
            raise ValueError(f"throttle factor must be in (0, 1], got {self.factor}")


@dataclass(frozen=True)
class AcsRedirect:
    """PCIe ACS with P2P request/completion redirect on the bridge `bridge` (a BDF) above
    `gpus`: their paths to their NICs and to each other cross it, so each reports the bridge
    as redirecting (probes/sim/simclocks.py)."""

    bridge: str = "0000:17:00.0"
    gpus: tuple[int, ...] = (0, 1)


@dataclass(frozen=True)
class PeermemMissing:
    """No nvidia_peermem loaded (and the proprietary driver: no dma-buf either)."""


Fault = (
    LinksDown
    | BandwidthFactor
    | ErrorGrowth
    | P2PDisabled
    | Contention
    | TransferFails
    | TransferHangs
    | PcieDowntrained
    | HostCopySlow
    | BusyGpu
    | FabricNotCompleted
    | FabricStatusError
    | FabricUnhealthy
    | FabricManagerDown
    | PeerCopiesFail
    | DriverRestarted
    | GpuLost
    | SwitchTrayLost
    | NvSwitchLost
    | InsufficientNvlinks
    | CliqueMoved
    | LinkXid
    | SwitchSxid
    | ThrottledGpu
    | AcsRedirect
    | PeermemMissing
    | GpuRecoveryAction
    | RowRemapPending
    | RowRemapFailed
    | AerGrowth
    | NicPortFlapping
    | NicSymbolErrors
    | NicPortDown
    | NicRateDegraded
    | NicPathSys
)


def gpus_named(fault: Fault) -> tuple[int, ...]:
    """Every GPU index a fault refers to, so the fabric can check them against its preset."""
    match fault:
        case BandwidthFactor(src=s, dst=d):
            return (s, d)
        case P2PDisabled(a=a, b=b):
            return (a, b)
        case Contention(gpu=g, peer=p):
            return (g,) if p is None else (g, p)
        case TransferHangs(gpu=g) | FabricNotCompleted(gpu=g) | FabricStatusError(gpu=g) \
                | FabricUnhealthy(gpu=g):
            return () if g is None else (g,)
        case PeerCopiesFail(a=a, b=b):
            return (a, b)
        case FabricManagerDown() | DriverRestarted() | SwitchTrayLost() | CliqueMoved() \
                | SwitchSxid() | PeermemMissing() | NvSwitchLost() | NicPortFlapping() \
                | NicSymbolErrors() | NicPortDown() | NicRateDegraded():
            return ()
        case AcsRedirect(gpus=gs):
            return gs
        case _:
            return (fault.gpu,)
