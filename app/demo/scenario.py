"""What goes wrong in the demo, and when: faults as functions of time.

Time `t` is seconds from the moment the live fleet starts; the backfilled day is `t < 0`.
Each `Episode` says which faults one host suffers while it lasts, possibly changing as it
goes on (a pair losing bandwidth a little more every minute, replay errors growing faster).
`faults_at(host, t)` is the whole truth for a host at a time, so the same scenario drives
the live fleet (a director applies the difference every few seconds) and the backfill (the
same call at past times on a fake clock). A `Silence` makes a host stop reporting, the way a
crashed node does.

The live story (default fleet):
    +30 s   hgx8-02   NVLink replay errors start on GPU5 link 2 and double every 2 min
    +60 s   h200x2-01 GPU0<->GPU1 slowly loses bandwidth: -5% a minute, down to 50%
    +120 s  mesh4-01  a foreign job copies GPU0->GPU1 (contended samples, not degradation)
    +180 s  hgx8-01   two of GPU3's NVLinks go down (NV18 -> NV16 to every peer)
    +240 s  pcie4-01  stops reporting
    +150 s  hgx8-03   GPU6 falls off the bus (Xid 79): GPUMissing, its pairs unknown
    now     mesh4-02  its probe clock runs 3 min behind: ProbeClockSkew, never stale
    now     h200x2-02 a 2 h maintenance window; +90 s two NVLinks of GPU1 go down: judged
                      and shown, not paged
    always  mesh4-01  GPU3 runs a job: skipped by sweeps
    always  pcie4-02  GPU2's PCIe link trained x4 of x16 (3 h ago): its h2d/d2h measure a
                      quarter of what the slot offers, judged degraded (mesh4-01 GPU1 in a
                      fleet without pcie4-02)
    always  nvl72-a-tray12  sits in clique 2, apart from its rack (clique 1)
    +45 s   nvl72-a-tray07  GPU2 trains too few NVLinks (health: insufficient NVLinks)
    +90 s   nvl72-a-tray15  fabric registration stuck IN_PROGRESS
    always  hgx8-03   every path 9 % slow: its own baseline absorbed it, its fleet peers
                      (the other hgx8 boards) show it (P2PBelowFleetPeers, docs/fleet-peers.md)
    +60 s   mesh4-03  GPU2 power-capped: its slow pairs read "slow, GPU2 power-capped during
                      the test", the GPU is degraded on its own after 4 of 6 sweeps
    always  mesh4-03  ACS redirect on a bridge above GPU0/GPU1: their RDMA readiness poor
    always  mesh4-02  no nvidia_peermem: every GPU's RDMA readiness not ready
    +50 .. +200 s     the driver's own verdicts: DRAIN_P2P, a pending and a failed row
                      remap, rising PCIe AER errors (app/demo/driver_story.py)
The backfilled day: hgx8-01 lost four links for an hour 10 h ago; hgx8-02 had a burst
of replay errors 6 h ago; mesh4-01 was busy with a job on GPU2 during the working day;
h200x2-02 had P2P disabled by a driver setting for an hour 20 h ago; the rack nvl72-a lost
NVLink switch tray 4 for two hours 8 h ago (every GPU of its 18 trays at 16 of 18 links);
during Slurm job 81240 (1.8 h ago) GPU2 link 7 of hgx8-01 went down and link 6 replayed
(the job's snapshots and their diff: `app/demo/jobs.py`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from peerwatch.app.demo.driver_story import driver_story
from peerwatch.app.demo.fleet import DemoHost, find_host, rack_name, rack_trays
from peerwatch.probes.sim.faults import (
    AcsRedirect,
    BandwidthFactor,
    BusyGpu,
    CliqueMoved,
    Contention,
    ErrorGrowth,
    FabricNotCompleted,
    Fault,
    GpuLost,
    InsufficientNvlinks,
    LinksDown,
    LinkXid,
    P2PDisabled,
    PcieDowntrained,
    PeermemMissing,
    SwitchSxid,
    SwitchTrayLost,
    ThrottledGpu,
)
from peerwatch.probes.sim.nic_faults import NicPathSys, NicPortFlapping

HOUR = 3600.0
FaultsOverTime = Callable[[float], tuple[Fault, ...]]  # seconds since the episode began


@dataclass(frozen=True)
class Episode:
    host: str
    start_s: float
    end_s: float
    faults: FaultsOverTime
    what: str

    def active(self, t: float) -> bool:
        return self.start_s <= t < self.end_s


@dataclass(frozen=True)
class Silence:
    host: str
    start_s: float
    what: str = "stops reporting"


@dataclass(frozen=True)
class ClockSkew:
    """A host whose probe clock is off by `seconds` (negative: behind) from the start."""

    host: str
    seconds: float

    @property
    def what(self) -> str:
        way = "behind" if self.seconds < 0 else "ahead"
        return f"its probe clock runs {abs(self.seconds) / 60:g} min {way} (a warning, never stale)"


@dataclass(frozen=True)
class Maintenance:
    """A maintenance window declared for `host` when the demo starts."""

    host: str
    hours: float
    comment: str


@dataclass(frozen=True)
class Scenario:
    episodes: tuple[Episode, ...]
    silences: tuple[Silence, ...]
    clocks: tuple[ClockSkew, ...] = ()
    maintenance: tuple[Maintenance, ...] = ()

    def clock_skew_s(self, host: str) -> float:
        return next((c.seconds for c in self.clocks if c.host == host), 0.0)

    def faults_at(self, host: str, t: float) -> frozenset[Fault]:
        found: set[Fault] = set()
        for e in self.episodes:
            if e.host == host and e.active(t):
                found.update(e.faults(t - e.start_s))
        return frozenset(found)

    def silent_at(self, host: str, t: float) -> bool:
        return any(s.host == host and t >= s.start_s for s in self.silences)

    def describe(self, history_age_s: float = 0.0) -> list[str]:
        """One line per happening, in time order, as time from now. The live story starts
        now; the backfilled history (t < 0) was written when the demo's database was new,
        `history_age_s` ago, so on a restart it lies that much further back."""
        events = [(e.start_s, e.host, e.what) for e in self.episodes]
        events += [(s.start_s, s.host, s.what) for s in self.silences]
        events += [(0.0, c.host, c.what) for c in self.clocks]
        events += [(0.0, m.host, f"in maintenance for {m.hours:g} h ({m.comment}): verdicts "
                                 "shown, no pages") for m in self.maintenance]
        shifted = [(t - history_age_s if t < 0 else t, host, what) for t, host, what in events]
        return [f"{_when(t):>8} {host}: {what}" for t, host, what in _grouped(sorted(shifted))]


def _grouped(events: list[tuple[float, str, str]]) -> list[tuple[float, str, str]]:
    """One line for a happening many hosts share (a rack's switch tray): "a .. z (18 hosts)"."""
    hosts: dict[tuple[float, str], list[str]] = {}
    for t, host, what in events:
        hosts.setdefault((t, what), []).append(host)
    return [(t, names[0] if len(names) == 1 else f"{names[0]} .. {names[-1]} "
             f"({len(names)} hosts)", what) for (t, what), names in hosts.items()]


def _when(t: float) -> str:
    if math.isinf(t):
        return "always"
    return f"{t / HOUR:+.1f} h" if abs(t) >= HOUR else f"{t:+.0f} s"


def _constant(*faults: Fault) -> FaultsOverTime:
    return lambda _elapsed: faults


def declining_bandwidth(src: int, dst: int, per_minute: float, floor: float) -> FaultsOverTime:
    """A path losing `per_minute` of its bandwidth each minute, never below `floor`."""
    def at(elapsed: float) -> tuple[Fault, ...]:
        factor = max(floor, 1.0 - per_minute * math.floor(elapsed / 60.0 + 1))
        return (BandwidthFactor(src=src, dst=dst, factor=round(factor, 4)),)
    return at


def rising_errors(gpu: int, link: int, start_per_s: float, doubling_s: float,
                  cap_per_s: float) -> FaultsOverTime:
    """Replay errors whose rate doubles every `doubling_s` (stepwise, capped)."""
    def at(elapsed: float) -> tuple[Fault, ...]:
        rate = min(cap_per_s, start_per_s * 2 ** math.floor(elapsed / doubling_s))
        return (ErrorGrowth(gpu=gpu, link=link, counter="replay", per_second=rate),)
    return at


def whole_host_slow(gpus: int, factor: float) -> FaultsOverTime:
    """Every path of an n-GPU board delivers `factor` of its bandwidth (a slow board)."""
    faults = tuple(BandwidthFactor(src=s, dst=d, factor=factor)
                   for s in range(gpus) for d in range(s + 1, gpus))
    return _constant(*faults)


def _exists(fleet: list[DemoHost], preset: str, ordinal: int) -> bool:
    host = find_host(fleet, preset, ordinal)
    return host is not None and host.ordinal == ordinal


def default_scenario(fleet: list[DemoHost]) -> Scenario:
    """The story in the module docstring, cast onto whichever hosts the fleet has."""
    episodes: list[Episode] = []
    silences: list[Silence] = []
    forever = math.inf

    def cast(preset: str, ordinal: int, start: float, end: float, faults: FaultsOverTime,
             what: str) -> None:
        host = find_host(fleet, preset, ordinal)
        if host is not None:
            episodes.append(Episode(host.name, start, end, faults, what))

    # live
    cast("hgx8", 2, 30, forever, rising_errors(5, 2, 0.05, 120, 5.0),
         "NVLink replay errors on GPU5 link 2, doubling every 2 min")
    cast("h200x2", 1, 60, forever, declining_bandwidth(0, 1, 0.05, 0.5),
         "GPU0<->GPU1 loses 5% of its bandwidth a minute, down to half")
    cast("mesh4", 1, 120, 420, _constant(Contention(gpu=0, peer=1, bytes_per_s=40e9)),
         "a foreign job copies GPU0->GPU1 for 5 min")
    cast("hgx8", 1, 180, forever, _constant(LinksDown(gpu=3, count=2)),
         "two NVLinks of GPU3 go down")
    cast("mesh4", 1, -2 * HOUR, forever, _constant(BusyGpu(gpu=3)), "GPU3 runs a job")
    cast("hgx8", 1, 20, forever, _constant(LinkXid(gpu=4, link=3, every_s=30)),
         "GPU4 NVLink 3 logs Xid 74 every 30 s, link up: a link fault (XidFault) at the third")
    cast("hgx8", 2 if _exists(fleet, "hgx8", 2) else 1, 25, forever,
         _constant(SwitchSxid(switch=0, sxid=12028)),
         "NVSwitch 0 logs a non-fatal SXid 12028 (XidWarning, the verdicts unchanged)")
    cast("hgx8", 1, -3 * HOUR, -2.5 * HOUR, _constant(LinkXid(gpu=2, link=9, every_s=300)),
         "GPU2 NVLink 9 logged Xid 74 every 5 min for half an hour")
    # the backfilled day
    cast("hgx8", 1, -10 * HOUR, -9 * HOUR, _constant(LinksDown(gpu=5, count=4)),
         "four NVLinks of GPU5 down for an hour")
    cast("hgx8", 2, -6 * HOUR, -5 * HOUR, _constant(
        ErrorGrowth(gpu=1, link=7, counter="replay", per_second=0.5)),
         "a burst of NVLink replay errors on GPU1 link 7")
    cast("mesh4", 1, -14 * HOUR, -4 * HOUR, _constant(BusyGpu(gpu=2)), "GPU2 runs a job")
    cast("h200x2", 2, -20 * HOUR, -19 * HOUR, _constant(P2PDisabled(a=0, b=1)),
         "P2P disabled between GPU0 and GPU1 by a driver setting")
    cast("hgx8", 1, -1.8 * HOUR, -1.0 * HOUR, _constant(
        LinksDown(gpu=2, links=(7,)), ErrorGrowth(gpu=2, link=6, counter="replay",
                                                  per_second=0.2)),
         "during job 81240, GPU2 link 7 goes down and link 6 replays")

    slow_pcie = ("pcie4", 2, 2) if _exists(fleet, "pcie4", 2) else ("mesh4", 1, 1)
    cast(slow_pcie[0], slow_pcie[1], -3 * HOUR, forever,
         _constant(PcieDowntrained(gpu=slow_pcie[2], width=4)),
         f"the PCIe link of GPU{slow_pcie[2]} trains x4 of x16: its host <-> GPU copies "
         "measure a quarter of what the slot offers")
    if _exists(fleet, "hgx8", 3):  # fleets too small for these keep the story above
        cast("hgx8", 3, 150, forever, _constant(GpuLost(gpu=6)),
             "GPU6 falls off the bus (Xid 79)")
        cast("hgx8", 3, -forever, forever, whole_host_slow(8, 0.91),
             "every path 9% slow from the start: its baseline absorbed it, its fleet peers "
             "show it")
    if _exists(fleet, "h200x2", 2):
        cast("h200x2", 2, 90, forever, _constant(LinksDown(gpu=1, count=2)),
             "two NVLinks of GPU1 go down, inside its maintenance window")
    _gpu_evidence_story(fleet, cast)
    driver_story(fleet, cast)
    # RDMA NICs (docs/network.md): a flapping port and a GPU whose NIC is across the sockets
    if _exists(fleet, "hgx8", 3):
        cast("hgx8", 3, 40, forever, _constant(NicPortFlapping(nic="mlx5_6", every_s=120)),
             "mlx5_6's port goes down and back every 2 min (NICPortFlapping)")
    if _exists(fleet, "hgx8", 2):  # a small fleet keeps hgx8-01's story as it is
        cast("hgx8", 2, 0, forever, _constant(NicPathSys(gpu=5)),
             "GPU5's nearest NIC sits across the sockets: its PCIe path is SYS (RDMA poor)")

    episodes += _rack_story(fleet)
    silent = find_host(fleet, "pcie4", 1)
    if silent is not None:
        silences.append(Silence(silent.name, 240))
    clocks = (ClockSkew("mesh4-02", -180.0),) if _exists(fleet, "mesh4", 2) else ()
    maintenance = (Maintenance("h200x2-02", 2.0, "planned NVLink cable swap"),) \
        if _exists(fleet, "h200x2", 2) else ()
    return Scenario(tuple(episodes), tuple(silences), clocks, maintenance)


def _gpu_evidence_story(fleet: list[DemoHost],
                        cast: Callable[[str, int, float, float, FaultsOverTime, str], None]
                        ) -> None:
    """A power-capped GPU (its pairs slow, explained, the GPU its own finding), ACS redirect
    on a bridge above two GPUs, a host without nvidia_peermem: where the fleet has them."""
    if _exists(fleet, "mesh4", 3):
        cast("mesh4", 3, 60, math.inf, _constant(ThrottledGpu(gpu=2, reason="power",
                                                              factor=0.7)),
             "GPU2 is power-capped at 450 W: its pairs slow (explained, not a fabric fault), "
             "the GPU its own verdict")
    if _exists(fleet, "mesh4", 3):
        cast("mesh4", 3, -math.inf, math.inf,
             _constant(AcsRedirect(bridge="0000:06:00.0", gpus=(0, 1))),
             "ACS redirect on PCIe bridge 0000:06:00.0 above GPU0 and GPU1: RDMA poor")
    if _exists(fleet, "mesh4", 2):
        cast("mesh4", 2, -math.inf, math.inf, _constant(PeermemMissing()),
             "no nvidia_peermem (nor dma-buf): GPUDirect RDMA not ready")


def _rack_story(fleet: list[DemoHost]) -> list[Episode]:
    """The first NVL72 rack's faults (none when the demo runs without a rack)."""
    trays = {h.name: h for h in rack_trays(fleet, rack_name(0))}
    if not trays:
        return []
    rack = rack_name(0)
    out = [Episode(name, -8.5 * HOUR, -6.5 * HOUR, _constant(SwitchTrayLost(tray=4)),
                   "NVLink switch tray 4 lost: every GPU at 16 of 18 links")
           for name in sorted(trays)]
    told = [(12, -2 * HOUR, _constant(CliqueMoved(clique_id=2)),
             "sits in clique 2, apart from its rack (clique 1)"),
            (7, 45, _constant(InsufficientNvlinks(gpu=2)),
             "GPU2 trains too few NVLinks (health: insufficient NVLinks)"),
            (15, 90, _constant(FabricNotCompleted(state="in_progress")),
             "fabric registration stuck IN_PROGRESS")]
    for tray, start, faults, what in told:
        name = f"{rack}-tray{tray:02d}"
        if name in trays:
            out.append(Episode(name, start, math.inf, faults, what))
    return out
