"""A simulated GPU host: the `Fabric` Protocol answered from a topology preset and faults.

    fab = SimulatedFabric("hgx8", seed=7)                    # 8 x H200 behind NVSwitch
    fab.inject(LinksDown(gpu=3, count=6), Contention(gpu=0, peer=1))
    fab.pair(3, 4).topology          -> "NV12"
    fab.measure(TestSpec(TestName.CE_WRITE, src=0, dst=1)) -> Measurement (about half speed)
    fab.clear()                      # all faults gone (lifetime error counts stay)

What it reports hangs together the way a real host does: NVML-style views (`gpu`, `nvlinks`,
`pair`, counters, activity) and measured bandwidth come from the same wiring (`SimTopology`)
and the same measured behaviour (`PerfModel`), so a downed link narrows NV#, lowers the
expected bandwidth and the measured one alike. Tests do not sleep: `gpu_time_s` is modelled
from bytes and bandwidth. Noise is seeded per test, so the same seed and the same calls give
the same numbers (also when a watchdog thread is left behind). Time-based effects (error
counters growing, a foreign job's bytes) follow the injected `clock`, so a fake clock drives
them in tests and a real one in the demo.
"""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import replace
from datetime import datetime

import peerwatch.probes as probes
from peerwatch.probes.clocks import GpuClocks
from peerwatch.probes.errors import (
    BadProbeRequest,
    GpuUnreachable,
    NotSupported,
    TransferError,
)
from peerwatch.probes.fabric import Measurement, TestSpec
from peerwatch.probes.gpu_health import ImexStatus, PcieAer
from peerwatch.probes.nics import NicDevice, NicPort
from peerwatch.probes.report import (
    FabricEvent,
    FabricManagerInfo,
    GpuActivity,
    GpuInfo,
    HostIdentity,
    LinkCounters,
    LinkState,
    NvLinkPort,
    PairInfo,
    PcieLink,
    PciGpu,
    RemoteType,
    test_scope,
    utcnow,
)
from peerwatch.probes.sim import simclocks, simdriver, simfabric
from peerwatch.probes.sim.faults import (
    BusyGpu,
    Contention,
    DriverRestarted,
    ErrorGrowth,
    Fault,
    GpuLost,
    ThrottledGpu,
    TransferFails,
    TransferHangs,
    gpus_named,
)
from peerwatch.probes.sim.presets import Preset, load_calibration, load_preset
from peerwatch.probes.sim.simcounters import CounterBank
from peerwatch.probes.sim.simevents import SimEvents
from peerwatch.probes.sim.simnics import SimNics
from peerwatch.probes.sim.simrun import Run, contention_rate, model_run
from peerwatch.probes.sim.simtopo import SimTopology
from peerwatch.probes.test_kinds import kind_of
from peerwatch.probes.topology import normalize_bus_id

LINK_CAPABILITIES = {"p2p_supported": True, "p2p_atomics": True, "sysmem_access": True,
                     "sysmem_atomics": True, "sli_bridge": True, "valid": True}


class SimulatedFabric:
    """A GPU host built from a preset; see the module docstring and `probes.sim.faults`."""

    def __init__(
        self,
        preset: str | Preset = "h200x2",
        *,
        seed: int = 0,
        faults: Iterable[Fault] = (),
        clock: Callable[[], float] = time.monotonic,
        hostname: str | None = None,
        started_at: datetime | None = None,
        rack: str | None = None,
    ) -> None:
        self.preset = load_preset(preset) if isinstance(preset, str) else preset
        self.name = f"simulated:{self.preset.name}"
        self.seed = seed
        self.clock = clock
        self.hostname = hostname or self.preset.hostname
        self.rack = rack  # rack presets: the rack this tray is in (None: the preset's)
        self._cal = load_calibration()
        self._lock = threading.RLock()
        self._faults: list[Fault] = []
        self._topo = SimTopology(self.preset, self._cal, ())
        self._counters = CounterBank(self.preset, self._topo, seed)
        self._last_tick = clock()
        self._runs: Counter[str] = Counter()
        self._violation_ns: dict[tuple[int, str], float] = {}  # (gpu, power|thermal) -> ns
        self._aer: dict[tuple[int, bool, str], float] = {}  # simdriver.grow_aer's counts
        self._hangs: list[threading.Event] = []
        self.started_at = started_at  # reported as the probe's start (None: not reported)
        self._driver_loaded_at: datetime | None = None
        self._events = SimEvents()  # the Xid/SXid lines its faults log (simevents.py)
        self._nics = SimNics(self.preset)  # its RDMA NICs (simnics.py)
        self.inject(*faults)

    # ------------------------------------------------------------------ faults

    @property
    def faults(self) -> tuple[Fault, ...]:
        return tuple(self._faults)

    def inject(self, *faults: Fault) -> None:
        """Add faults now; their time-based effects start counting from this moment."""
        for f in faults:
            for g in gpus_named(f):
                self._check_index(g)
            simfabric.check_fault(self.preset, f)
            try:
                self._nics.check(f)
            except ValueError as exc:
                raise BadProbeRequest(str(exc)) from exc
        with self._lock:
            self._advance()
            self._faults.extend(faults)
            if any(isinstance(f, DriverRestarted) for f in faults):
                self._driver_loaded_at = utcnow()
            up = self._ports_up()
            self._rebuild()
            went_down = sorted(up - self._ports_up())
            self._events.injected(tuple(faults), self._pci_of(), self.clock(), went_down)

    def clear(self, *faults: Fault) -> None:
        """Remove the given faults (all when none given); counts already made stay."""
        with self._lock:
            self._advance()
            if not faults:
                faults = tuple(self._faults)
            for f in faults:
                if f not in self._faults:
                    raise BadProbeRequest(f"fault {f!r} is not active on {self.hostname}")
                self._faults.remove(f)
            self._rebuild()
            self._events.cleared(tuple(faults))
        if any(isinstance(f, TransferHangs) for f in faults):
            self.release_hangs()

    def release_hangs(self) -> None:
        """Let every transfer blocked by a `TransferHangs` fault give up now."""
        with self._lock:
            for ev in self._hangs:
                ev.set()

    def _ports_up(self) -> set[tuple[int, int]]:
        return {(p.gpu, p.link) for ports in self._topo.ports.values() for p in ports
                if p.up and p.wired}

    def _pci_of(self) -> dict[int, str]:
        return {i: slot.pci_bus_id for i, slot in enumerate(self.preset.gpus)}

    def drain_events(self, at: datetime) -> list[FabricEvent]:
        """The Xid/SXid events logged since the last call, stamped `at` (a report's time)."""
        with self._lock:
            self._advance()
            return self._events.take(at)

    def _rebuild(self) -> None:
        self._topo = SimTopology(self.preset, self._cal, tuple(self._faults))

    def _advance(self) -> None:
        """Bring clock-driven effects up to now: error growth and foreign jobs' bytes."""
        with self._lock:
            now = self.clock()
            dt = now - self._last_tick
            self._last_tick = max(now, self._last_tick)
            if dt <= 0:
                return
            self._events.advance(now, self._pci_of())
            simdriver.grow_aer(self._faults, self._aer, dt)
            self._nics.advance(self._faults, dt)
            for f in self._faults:
                if isinstance(f, ErrorGrowth):
                    self._counters.add_errors(f.gpu, f.link, f.counter, f.per_second * dt)
                elif isinstance(f, Contention):
                    rate = contention_rate(self._topo, f, shared=False)
                    self._counters.flow(self._topo, f.gpu, f.peer, rate * dt)
                elif isinstance(f, ThrottledGpu) and f.reason != "hw":
                    key = (f.gpu, f.reason)
                    self._violation_ns[key] = self._violation_ns.get(key, 0.0) + dt * 1e9

    # ------------------------------------------------------------------ inventory

    def host(self) -> HostIdentity:
        return HostIdentity(hostname=self.hostname, fabric=self.name,
                            driver_version=self.preset.driver_version,
                            cuda_version=self.preset.cuda_version,
                            probe_version=probes.__version__,
                            probe_started_at=self.started_at,
                            driver_loaded_at=self._driver_loaded_at)

    def fabric_manager(self) -> FabricManagerInfo:
        return simfabric.fabric_manager(self.preset, self._faults)

    def gpu_count(self) -> int:
        return len(self.preset.gpus)

    def pci_gpus(self) -> list[PciGpu]:
        """The GPUs sysfs would list on the PCI bus: every slot of the preset, a lost GPU
        included unless it left the bus too (`GpuLost(on_pci=False)`)."""
        gone = {f.gpu for f in self._faults if isinstance(f, GpuLost) and not f.on_pci}
        return [PciGpu(pci_bus_id=normalize_bus_id(slot.pci_bus_id) or slot.pci_bus_id,
                       driver="nvidia")
                for i, slot in enumerate(self.preset.gpus) if i not in gone]

    def gpu(self, index: int) -> GpuInfo:
        self._check_gpu(index)
        slot, model = self.preset.gpus[index], self.preset.gpu_model
        socket = self.preset.sockets[slot.socket]
        gen, width = self._topo.pcie_now[index]
        return GpuInfo(
            index=index, uuid=self._uuid(index), name=model.name, pci_bus_id=slot.pci_bus_id,
            memory_total_bytes=model.memory_total_bytes, cpu_affinity=socket.cpu_affinity,
            numa_node=socket.numa_node, nvlink_count=len(self._topo.ports[index]),
            pcie=PcieLink(gen_current=gen, gen_max=self.preset.pcie.gen, width_current=width,
                          width_max=self.preset.pcie.width, replay_count=0),
            rdma=simclocks.rdma(self.preset, self._faults, index,
                                self.preset.rdma.gpudirect_supported, self._nic_rate(index)),
            switch_fabric=simfabric.switch_fabric(self.preset, self._faults, index, self.rack),
            driver=simdriver.driver_health(self._faults, index),
        )

    def pcie_aer(self, gpu: int) -> PcieAer:
        """PCIe AER counters of the GPU and its bridge (probes/sim/simdriver.py)."""
        self._check_gpu(gpu)
        with self._lock:
            self._advance()
            return simdriver.pcie_aer(gpu, self.preset.gpus[gpu].pci_bus_id, self._aer)

    def nics(self) -> list[NicDevice]:
        """The host's RDMA NICs (probes/sim/simnics.py)."""
        return self._nics.devices(self._faults)

    def nic_ports(self) -> list[NicPort]:
        with self._lock:
            self._advance()
            return self._nics.ports(self._faults)

    def imex(self) -> ImexStatus:
        return simdriver.imex(self.preset.rack)

    def _uuid(self, index: int) -> str:
        slot = self.preset.gpus[index]
        if slot.uuid and self.hostname == self.preset.hostname:
            return slot.uuid
        # Distinct per host, so a simulated fleet never shows two GPUs with one UUID.
        key = f"peerwatch-sim/{self.preset.name}/{self.hostname}/{index}"
        return f"GPU-{uuid.uuid5(uuid.NAMESPACE_URL, key)}"

    def nvlinks(self, gpu: int) -> list[NvLinkPort]:
        self._check_gpu(gpu)
        nv, topo = self.preset.nvlink, self._topo
        return [
            NvLinkPort(
                gpu=gpu, link=p.link, state=LinkState.UP if p.up else LinkState.DOWN,
                version=nv.version, speed_bps=topo.link_bps if p.up else None,
                remote_type=(RemoteType.UNKNOWN if not p.wired else
                             RemoteType.NVSWITCH if p.remote is None else RemoteType.GPU),
                remote_pci_bus_id=None if p.remote is None else self.preset.gpus[
                    p.remote].pci_bus_id,
                remote_gpu=p.remote, capabilities=dict(LINK_CAPABILITIES),
            )
            for p in topo.ports[gpu]
        ]

    def link_counters(self, gpu: int) -> list[LinkCounters]:
        self._check_gpu(gpu)
        with self._lock:
            self._advance()
            return self._counters.read(self._topo, gpu)

    def pcie_replay(self, gpu: int) -> int:
        self._check_gpu(gpu)
        return 0

    def clocks(self, gpu: int) -> GpuClocks:
        """Clocks, power, temperature and clocks-event reasons (probes/sim/simclocks.py)."""
        self._check_gpu(gpu)
        with self._lock:
            self._advance()
            return simclocks.clocks(self._faults, gpu, self._violation_ns)

    def activity(self, gpu: int) -> GpuActivity:
        self._check_gpu(gpu)
        model = self.preset.gpu_model
        busy = self._busy(gpu)
        if busy is None:
            return GpuActivity(gpu=gpu, utilization_pct=0.0,
                               memory_used_bytes=model.idle_memory_used_bytes)
        used = max(model.idle_memory_used_bytes,
                   int(model.memory_total_bytes * busy.memory_used_fraction))
        return GpuActivity(gpu=gpu, utilization_pct=busy.utilization_pct,
                           memory_used_bytes=used, compute_processes=busy.processes)

    def pair(self, src: int, dst: int) -> PairInfo:
        self._check_pair(src, dst)
        return self._topo.pair_info(src, dst)

    # ------------------------------------------------------------------ transfer tests

    def measure(self, spec: TestSpec) -> Measurement:
        gpus = self._check_spec(spec)
        self._advance()
        self._hang_if_told(spec, gpus)
        for f in self.faults:
            if isinstance(f, TransferFails) and f.gpu in gpus and f.test in (None, spec.test):
                raise TransferError(f"{spec.label()}: {f.message}")
        peer_error = simfabric.peer_copy_failure(self._faults, spec)
        if peer_error is not None:
            raise TransferError(peer_error)
        if kind_of(spec.test).sim.model == "nic_loopback":
            return self._loopback(spec)
        with self._lock:
            run = model_run(self._topo, spec, self._faults)
            samples = self._noisy(spec, run)
            for sender, receiver, nbytes in run.flows:
                self._counters.flow(self._topo, sender, receiver, nbytes)
            for c in (f for f in self._faults if isinstance(f, Contention)):
                rate = contention_rate(self._topo, c, shared=c in run.contended_by)
                self._counters.flow(self._topo, c.gpu, c.peer, rate * run.duration_s)
        wire: Counter[int] = Counter()
        for sender, _, nbytes in run.flows:
            wire[sender] += int(nbytes)
        return Measurement(samples=samples, gpu_time_s=run.duration_s,
                           device_memory_bytes=run.memory_bytes, verified=True,
                           wire_bytes=dict(wire), per_gpu=self._noisy_per_gpu(spec, run))

    def _noisy_per_gpu(self, spec: TestSpec, run: Run) -> dict[int, list[float]]:
        """A joint test's samples for each GPU, each GPU's figure with its own noise."""
        return {g: self._noisy(replace(spec, src=g), replace(run, value=v))
                for g, v in run.per_gpu.items() if v > 0}

    def _nic_rate(self, gpu: int) -> float | None:
        nic = self.preset.gpus[gpu].rdma.nearest_nic
        return None if nic is None else self._nics.rate_bps(nic, self._faults)

    def _loopback(self, spec: TestSpec) -> Measurement:
        """gdr_loopback: the GPU's memory through its nearest NIC and back (simnics.py)."""
        assert spec.src is not None
        with self._lock:
            try:
                value = self._nics.loopback(spec.src, self._faults, self._topo.pcie_bps(spec.src))
            except ValueError as exc:
                raise NotSupported(str(exc)) from exc
            except RuntimeError as exc:
                raise TransferError(f"{spec.label()}: {exc}") from exc
            nbytes = float(spec.bytes_per_copy * (spec.copies * spec.samples + spec.warmup))
            self._nics.carried(spec.src, nbytes)
            run = Run(value=value, duration_s=nbytes / value, memory_bytes=2 * spec.bytes_per_copy)
            samples = self._noisy(spec, run)
        return Measurement(samples=samples, gpu_time_s=run.duration_s,
                           device_memory_bytes=run.memory_bytes, verified=True)

    def _noisy(self, spec: TestSpec, run: Run) -> list[float]:
        """Samples around the modelled value; seeded per (test, pair, budget, repetition)."""
        key = f"{spec.label()}|{spec.bytes_per_copy}|{spec.copies}"
        self._runs[key] += 1
        rng = random.Random(f"{self.seed}|{self.hostname}|{key}|{self._runs[key]}")
        latency = kind_of(spec.test).sim.model == "latency"
        sd = self._cal.noise["latency" if latency else "bandwidth"]
        return [run.value * max(0.5, 1 + rng.gauss(0, sd)) for _ in range(spec.samples)]

    def _hang_if_told(self, spec: TestSpec, gpus: tuple[int, ...]) -> None:
        for f in self.faults:
            if not isinstance(f, TransferHangs):
                continue
            if (f.gpu is None or f.gpu in gpus) and f.test in (None, spec.test):
                released = threading.Event()
                with self._lock:
                    self._hangs.append(released)
                started = time.monotonic()
                try:
                    how = "released" if released.wait(f.seconds) else "given up"
                finally:
                    with self._lock:
                        self._hangs.remove(released)
                waited = time.monotonic() - started
                raise TransferError(f"{spec.label()} hung for {waited:.1f} s (simulated), {how}")

    def _busy(self, gpu: int) -> BusyGpu | None:
        return next((f for f in self._faults if isinstance(f, BusyGpu) and f.gpu == gpu), None)

    def close(self) -> None:
        self.release_hangs()

    # ------------------------------------------------------------------ argument checks

    def _check_index(self, index: int) -> None:
        if not 0 <= index < len(self.preset.gpus):
            raise BadProbeRequest(
                f"no GPU {index} on {self.name} (GPUs 0-{len(self.preset.gpus) - 1})")

    def _check_gpu(self, index: int) -> None:
        self._check_index(index)
        if any(isinstance(f, GpuLost) and f.gpu == index and not f.still_listed
               for f in self._faults):
            raise GpuUnreachable(f"GPU {index}: GPU is lost (NVML_ERROR_GPU_IS_LOST, "
                                 "simulated Xid 79)")

    def _check_pair(self, src: int, dst: int) -> None:
        self._check_gpu(src)
        self._check_gpu(dst)
        if src == dst:
            raise BadProbeRequest(f"a pair needs two different GPUs, got {src} and {dst}")

    def _check_spec(self, spec: TestSpec) -> tuple[int, ...]:
        if spec.bytes_per_copy <= 0 or spec.copies < 1 or spec.samples < 1 or spec.warmup < 0:
            raise BadProbeRequest(f"{spec.label()}: budget must be positive, got {spec}")
        if test_scope(spec.test) == "set" or spec.joint:
            if len(set(spec.gpus)) != len(spec.gpus) or len(spec.gpus) < 2:
                raise BadProbeRequest(f"{spec.test} needs two or more distinct GPUs: {spec.gpus}")
            for g in spec.gpus:
                self._check_gpu(g)
            return tuple(spec.gpus)
        if test_scope(spec.test) == "gpu":
            if spec.src is None or spec.dst is not None or spec.gpus:
                raise BadProbeRequest(f"{spec.test} names one GPU as src, got {spec}")
            self._check_gpu(spec.src)
            return (spec.src,)
        if spec.src is None or spec.dst is None:
            raise BadProbeRequest(f"{spec.test} needs src and dst")
        self._check_pair(spec.src, spec.dst)
        return (spec.src, spec.dst)

