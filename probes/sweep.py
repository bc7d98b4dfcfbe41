"""The sweep: run the transfer tests over a host's GPUs, on any Fabric, and judge each sample.

    outcome = run_sweep(fabric, SweepOptions(tests=(TestName.CE_WRITE,), gpus=(0, 1, 2)))
    report  = build_report(fabric)            # inventory + counters + sweep, one `Report`

For every test (pair tests over all ordered pairs of the selected GPUs, allreduce once over
all of them, the per-GPU tests h2d, d2h and local on each selected GPU, also on a one-GPU
host) the sweep reads the NVLink counters of the GPUs involved, runs `measure()` under
a watchdog, reads the counters again and labels the sample `contended` when bytes that were
not the probe's own crossed its links (`probes.contention`). What it will not do:

- probe a busy GPU (compute processes, or utilisation above a threshold) unless forced: the
  GPU is listed in `SweepCost.skipped` with the reason;
- stop because one test failed: the failure becomes a `TransferResult` with `error`;
- wait forever: a test that outlives its watchdog is recorded as a `TransferTimeout`, and the
  GPUs it touched are treated as hung for the rest of the pass (see `probes.watchdog` for why
  a hung CUDA call cannot be killed), their remaining tests skipped with the reason.
"""

from __future__ import annotations

import resource
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import partial
from typing import Literal

from pydantic import ValidationError

from peerwatch.probes.budgets import DEFAULT_BUDGETS, Budget
from peerwatch.probes.contention import ContentionRule, foreign_bytes, probe_bytes
from peerwatch.probes.errors import (
    BadProbeRequest,
    NotSupported,
    PeerwatchProbeError,
    TransferTimeout,
)
from peerwatch.probes.fabric import Fabric, TestSpec
from peerwatch.probes.inventory import collect_counters, collect_inventory, read_host, read_item
from peerwatch.probes.joint import named, split
from peerwatch.probes.report import (
    NIC_TESTS,
    GpuActivity,
    Inventory,
    LinkCounters,
    NvLinkPort,
    ProbeError,
    Report,
    ReportKind,
    SkippedGpu,
    SweepCost,
    TestName,
    TransferResult,
    default_tests,
    test_scope,
    unit_of,
    utcnow,
)
from peerwatch.probes.test_kinds import kind_of
from peerwatch.probes.watchdog import Watchdog


@dataclass(frozen=True)
class SweepOptions:
    """What to run and within which limits. `gpus=None` means every GPU of the host."""

    tests: tuple[TestName, ...] = field(default_factory=default_tests)
    gpus: tuple[int, ...] | None = None
    budgets: Mapping[TestName, Budget] = field(default_factory=lambda: DEFAULT_BUDGETS)
    timeout_s: float | None = 30.0  # watchdog per test
    contention: ContentionRule = ContentionRule()
    busy_utilization_pct: float = 10.0  # above this a GPU counts as busy
    force: bool = False  # probe busy GPUs anyway


@dataclass(frozen=True)
class SweepProgress:
    """Reported after each planned test: `result` is None when it was skipped."""

    done: int
    total: int
    spec: TestSpec
    result: TransferResult | None


Progress = Callable[[SweepProgress], None]


@dataclass
class SweepOutcome:
    results: list[TransferResult]
    cost: SweepCost
    errors: list[ProbeError]


def plan(tests: tuple[TestName, ...], gpus: list[int],
         budgets: Mapping[TestName, Budget]) -> list[TestSpec]:
    """Every ordered pair of `gpus` for each pair test, one allreduce (and one joint test:
    all-to-all) over all of them, each GPU for a per-GPU test."""
    specs: list[TestSpec] = []
    for test in dict.fromkeys(tests):
        if test_scope(test) == "host_pair":  # run by a scheduler job on two hosts, not here
            continue
        budget = budgets.get(test, DEFAULT_BUDGETS[test])
        if kind_of(test).joint:
            if len(gpus) >= 2:
                specs.append(budget.spec(test, gpus=tuple(gpus)))
            continue
        if test_scope(test) == "gpu":
            specs += [budget.spec(test, g) for g in gpus]
            continue
        if test_scope(test) == "set":
            if len(gpus) >= 2:
                specs.append(budget.spec(test, gpus=tuple(gpus)))
            continue
        specs += [budget.spec(test, s, d) for s in gpus for d in gpus if s != d]
    return specs


def spec_gpus(spec: TestSpec) -> tuple[int, ...]:
    if test_scope(spec.test) == "set" or spec.joint:
        return spec.gpus
    if test_scope(spec.test) == "gpu":
        assert spec.src is not None
        return (spec.src,)
    assert spec.src is not None and spec.dst is not None
    return (spec.src, spec.dst)


def busy_reason(act: GpuActivity, threshold_pct: float) -> str | None:
    why = []
    if act.compute_processes:
        why.append(f"{act.compute_processes} compute process(es)")
    if act.utilization_pct is not None and act.utilization_pct > threshold_pct:
        why.append(f"utilisation {act.utilization_pct:.0f}% > {threshold_pct:.0f}%")
    return ("busy: " + ", ".join(why) + "; not probed (force to probe anyway)") if why else None


class _Sweep:
    def __init__(self, fabric: Fabric, options: SweepOptions, inventory: Inventory,
                 activity: list[GpuActivity] | None, progress: Progress | None,
                 now: Callable[[], datetime]) -> None:
        self.fabric, self.options, self.now = fabric, options, now
        self.progress = progress
        self.activity = activity
        self.inventory = inventory
        self.errors: list[ProbeError] = []
        self.skipped: list[SkippedGpu] = []
        self.hung: dict[int, str] = {}
        self.watchdog = Watchdog(options.timeout_s)
        self.ports: dict[int, list[NvLinkPort]] = {}
        for port in inventory.nvlinks:
            self.ports.setdefault(port.gpu, []).append(port)

    def selected(self) -> list[int]:
        known = [g.index for g in self.inventory.gpus]
        wanted = list(self.options.gpus) if self.options.gpus is not None else known
        for g in wanted:
            if g not in known:
                have = ", ".join(map(str, known)) or "none"
                raise BadProbeRequest(f"no GPU {g} on {self.fabric.name} (GPUs: {have})")
        return list(dict.fromkeys(wanted))

    def idle(self, gpus: list[int]) -> list[int]:
        if self.options.force:
            return gpus
        acts = {a.gpu: a for a in self.activity or []}
        keep = []
        for g in gpus:
            act = acts.get(g) or read_item(self.errors, f"{self.fabric.name}.activity gpu={g}",
                                           partial(self.fabric.activity, g))
            why = busy_reason(act, self.options.busy_utilization_pct) if act else None
            if why:
                self.skipped.append(SkippedGpu(gpu=g, reason=why))
            else:
                keep.append(g)
        return keep

    def without_nic(self, specs: list[TestSpec]) -> list[TestSpec]:
        """The specs less the NIC tests (gdr_loopback) of GPUs with no RDMA NIC: skipped,
        one line each saying so (a host without NICs has nothing to measure there)."""
        nic = {g.index: g.rdma.nearest_nic for g in self.inventory.gpus}
        keep = []
        for spec in specs:
            if spec.test in NIC_TESTS and spec.src is not None and not nic.get(spec.src):
                self.errors.append(ProbeError(
                    where=f"{self.fabric.name}.{spec.test.value} gpu={spec.src}",
                    message="skipped: no RDMA NIC near this GPU (/sys/class/infiniband shows "
                            "none): GPUDirect RDMA cannot be measured here"))
                continue
            keep.append(spec)
        return keep

    def run(self) -> SweepOutcome:
        wall0, cpu0 = time.perf_counter(), time.process_time()
        specs = self.without_nic(plan(self.options.tests, self.idle(self.selected()),
                                      self.options.budgets))
        results: list[TransferResult] = []
        try:
            for i, spec in enumerate(specs, 1):
                ready = self._unhung(spec)
                done = self._joint(ready) if ready else []
                results += done
                if self.progress:
                    self.progress(SweepProgress(i, len(specs), spec, done[0] if done else None))
        finally:
            self.watchdog.close()
        cost = SweepCost(
            gpu_time_s=sum(r.gpu_time_s for r in results),
            wall_time_s=time.perf_counter() - wall0,
            device_memory_bytes_max=max((r.device_memory_bytes for r in results), default=0),
            agent_cpu_s=time.process_time() - cpu0,
            agent_rss_bytes=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
            skipped=self.skipped + [SkippedGpu(gpu=g, reason=r) for g, r in self.hung.items()],
        )
        return SweepOutcome(results, cost, self.errors)

    def _unhung(self, spec: TestSpec) -> TestSpec | None:
        """The spec without hung GPUs (allreduce and all-to-all shrink to the rest), or None
        to skip it."""
        if test_scope(spec.test) == "set" or spec.joint:
            rest = tuple(g for g in spec.gpus if g not in self.hung)
            return replace(spec, gpus=rest) if len(rest) >= 2 else None
        return None if any(g in self.hung for g in spec_gpus(spec)) else spec

    def _counters(self, gpus: tuple[int, ...]) -> dict[int, list[LinkCounters]]:
        out = {}
        for g in gpus:
            try:
                out[g] = self.fabric.link_counters(g)
            except NotSupported:
                out[g] = []
            except PeerwatchProbeError as exc:
                where = f"{self.fabric.name}.link_counters gpu={g}"
                if all(e.where != where for e in self.errors):
                    self.errors.append(ProbeError(where=where, message=str(exc)[:2000]))
        return out

    def _joint(self, spec: TestSpec) -> list[TransferResult]:
        """A test's results: one, or a joint test's one per GPU (`probes/joint.py`)."""
        per_gpu: dict[int, list[float]] = {}
        one = self._one(spec, per_gpu)
        return split(spec, one, per_gpu) if spec.joint else [one]

    def _one(self, spec: TestSpec, per_gpu: dict[int, list[float]]) -> TransferResult:
        """Run one spec under the watchdog; a joint test's per-GPU samples go in `per_gpu`."""
        gpus = spec_gpus(spec)
        before = self._counters(gpus)
        started = self.now()
        try:
            m = self.watchdog.call(partial(self.fabric.measure, spec), spec.label())
        except TransferTimeout as exc:
            for g in gpus:
                self.hung[g] = (f"hung: {spec.label()} outlived its {self.options.timeout_s:g} s "
                                "watchdog; the GPU's remaining tests were skipped")
            return _failed(spec, started, str(exc))
        except Exception as exc:  # one failing test must never stop the sweep
            return _failed(spec, started, f"{type(exc).__name__}: {exc}")
        foreign = foreign_bytes(spec, m.wire_bytes, before, self._counters(gpus), self.ports)
        per_gpu.update(m.per_gpu)
        try:
            src, dst, gpus_named = named(spec)
            return TransferResult(
                test=spec.test, src=src, dst=dst, gpus=gpus_named,
                value=m.value, unit=unit_of(spec.test), samples=m.samples,
                bytes_per_copy=spec.bytes_per_copy, copies=spec.copies,
                gpu_time_s=m.gpu_time_s, device_memory_bytes=m.device_memory_bytes,
                verified=m.verified, foreign_bytes=foreign, started_at=started,
                contended=self.options.contention.contended(foreign, probe_bytes(
                    spec, m.wire_bytes)),
            )
        except (ValidationError, ValueError) as exc:
            return _failed(spec, started, f"impossible measurement {m.samples}: {exc}")


def _failed(spec: TestSpec, started: datetime, message: str) -> TransferResult:
    src, dst, gpus = named(spec)
    return TransferResult(test=spec.test, src=src, dst=dst, gpus=gpus,
                          unit=unit_of(spec.test), bytes_per_copy=spec.bytes_per_copy,
                          copies=spec.copies, started_at=started, error=message[:2000])


def run_sweep(
    fabric: Fabric,
    options: SweepOptions | None = None,
    *,
    inventory: Inventory | None = None,
    activity: list[GpuActivity] | None = None,
    progress: Progress | None = None,
    now: Callable[[], datetime] = utcnow,
) -> SweepOutcome:
    """Run the planned tests; `inventory`/`activity` are read from the fabric when not given.

    Raises BadProbeRequest for a GPU index the host does not have.
    """
    errors: list[ProbeError] = []
    inv = inventory if inventory is not None else collect_inventory(fabric, errors)
    sweep = _Sweep(fabric, options or SweepOptions(), inv, activity, progress, now)
    sweep.errors = errors
    return sweep.run()


def build_report(
    fabric: Fabric,
    kind: ReportKind = ReportKind.SWEEP,
    options: SweepOptions | None = None,
    *,
    progress: Progress | None = None,
    now: Callable[[], datetime] = utcnow,
) -> Report:
    """One whole probe pass as a `Report`: host, inventory, counters, and for a sweep the
    results and their cost. Counters are sampled before the sweep and again after it."""
    started = now()
    errors: list[ProbeError] = []
    host = read_host(fabric, errors)
    inventory = collect_inventory(fabric, errors)
    indices = [g.index for g in inventory.gpus]
    counters = [collect_counters(fabric, errors, indices, at=now())]
    results: list[TransferResult] = []
    cost = SweepCost()
    if kind is ReportKind.SWEEP:
        outcome = run_sweep(fabric, options, inventory=inventory,
                            activity=counters[0].activity, progress=progress, now=now)
        results, cost = outcome.results, outcome.cost
        errors += outcome.errors
        counters.append(collect_counters(fabric, errors, indices, at=now()))
    nics = (bool(inventory.nics) or any(c.nic_ports for c in counters)
            or any(r.test in NIC_TESTS for r in results))
    version: Literal[4, 5] = 5 if nics else 4  # SCHEMA_VERSION, or 5 for the NIC fields
    return Report(kind=kind, host=host, started_at=started, finished_at=max(now(), started),
                  inventory=inventory, counters=counters, results=results, cost=cost,
                  errors=errors, schema_version=version)
