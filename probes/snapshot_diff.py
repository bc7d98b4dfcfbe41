"""What changed between two snapshots of one host, one line per change, most serious first.

Pure: two `Snapshot`s in, a list of `Change`s out. The CLI (`peerwatch snapshot --diff`) and
the server (`GET /api/v1/hosts/{host}/jobs/{job_id}/diff`) both call `diff_snapshots`, so an
operator sees the same lines on a node and on the dashboard.

GPUs are matched by UUID, not index: when a GPU falls off the bus NVML renumbers the rest,
and an index match would report every later GPU as changed. Links are matched by (GPU UUID,
link). Counters are lifetime values: what matters is how much each grew, per link; a counter
that went down was reset (driver reload), which is said, not counted as growth.

Severity: CRITICAL is what breaks jobs (a GPU gone, a link down, the fabric or Fabric Manager
not ready); WARNING is what degrades them or precedes a failure (uncorrected NVLink errors
grew, PCIe downtrained, fabric registration changed, the driver changed); INFO is benign or
good news (a link came up, corrected CRC/ECC data errors, a GPU appeared).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from enum import IntEnum

from peerwatch.probes.report import GpuInfo, LinkCounters, LinkState, NvLinkPort, SwitchFabricInfo
from peerwatch.probes.snapshot import Snapshot

# NVLink error counters: uncorrected (a failing link retrains or replays) and corrected.
UNCORRECTED = ("replay", "recovery", "crc_flit")
CORRECTED = ("crc_data", "ecc_data")


class Severity(IntEnum):
    CRITICAL = 0
    WARNING = 1
    INFO = 2


@dataclass(frozen=True)
class Change:
    severity: Severity
    kind: str  # machine-readable: "gpu_missing", "link_down", "errors_grew", ...
    text: str

    def line(self) -> str:
        return f"{self.severity.name:<8} {self.text}"


def diff_snapshots(before: Snapshot, after: Snapshot) -> list[Change]:
    """Every change from `before` to `after`, most serious first (stable within a severity)."""
    changes = [*_host(before, after), *_gpus(before, after), *_links(before, after),
               *_counters(before, after), *_fabric_manager(before, after)]
    return sorted(changes, key=lambda c: c.severity)


def _label(gpu: GpuInfo) -> str:
    return f"GPU{gpu.index}"


def _host(before: Snapshot, after: Snapshot) -> Iterator[Change]:
    if before.host.hostname != after.host.hostname:
        yield Change(Severity.WARNING, "other_host", f"the snapshots are of different hosts: "
                     f"{before.host.hostname} -> {after.host.hostname}")
    if before.host.driver_version != after.host.driver_version:
        yield Change(Severity.WARNING, "driver_changed", f"driver changed: "
                     f"{before.host.driver_version} -> {after.host.driver_version}")


def _by_uuid(snap: Snapshot) -> dict[str, GpuInfo]:
    return {g.uuid: g for g in snap.inventory.gpus}


def _gpus(before: Snapshot, after: Snapshot) -> Iterator[Change]:
    old, new = _by_uuid(before), _by_uuid(after)
    for uuid, gpu in old.items():
        if uuid not in new:
            yield Change(Severity.CRITICAL, "gpu_missing", f"{_label(gpu)} {uuid} "
                         f"({gpu.pci_bus_id}) is missing")
    for uuid, gpu in new.items():
        if uuid not in old:
            yield Change(Severity.INFO, "gpu_appeared", f"{_label(gpu)} {uuid} "
                         f"({gpu.pci_bus_id}) appeared")
        else:
            yield from _pcie(old[uuid], gpu)
            yield from _fabric(_label(gpu), old[uuid].switch_fabric, gpu.switch_fabric)


def _pcie(old: GpuInfo, new: GpuInfo) -> Iterator[Change]:
    for what, prefix, was, now, top in (
            ("gen", "Gen", old.pcie.gen_current, new.pcie.gen_current, new.pcie.gen_max),
            ("width", "x", old.pcie.width_current, new.pcie.width_current, new.pcie.width_max)):
        if was is None or now is None or was == now:
            continue
        worse = now < was
        yield Change(Severity.WARNING if worse else Severity.INFO,
                     f"pcie_{what}_{'down' if worse else 'up'}",
                     f"{_label(new)} PCIe {what} {prefix}{was} -> {prefix}{now}"
                     + (f" (max {prefix}{top})" if top is not None else ""))


def _fabric(label: str, old: SwitchFabricInfo | None,
            new: SwitchFabricInfo | None) -> Iterator[Change]:
    if old is None and new is None:
        return
    if old is None or new is None:
        yield Change(Severity.WARNING, "fabric_changed", f"{label} fabric registration "
                     f"{'appeared' if old is None else 'is gone'}")
        return
    for field in ("state", "status", "health", "clique_id"):
        was, now = getattr(old, field), getattr(new, field)
        if was == now:
            continue
        bad = (field == "state" and now != "completed") or (
            field == "health" and now not in (None, "healthy"))
        yield Change(Severity.CRITICAL if bad else Severity.WARNING, f"fabric_{field}",
                     f"{label} fabric {field.replace('_', ' ')} {was} -> {now}")
    for issue in sorted(set(new.health_issues) - set(old.health_issues)):
        yield Change(Severity.WARNING, "fabric_issue", f"{label} fabric health issue: {issue}")


def _ports(snap: Snapshot) -> dict[tuple[str, int], tuple[GpuInfo, NvLinkPort]]:
    gpus = {g.index: g for g in snap.inventory.gpus}
    return {(gpus[p.gpu].uuid, p.link): (gpus[p.gpu], p) for p in snap.inventory.nvlinks
            if p.gpu in gpus}


def _links(before: Snapshot, after: Snapshot) -> Iterator[Change]:
    old, new = _ports(before), _ports(after)
    present = set(_by_uuid(after))
    for key, (gpu, port) in old.items():
        if key not in new:
            if gpu.uuid in present and port.state is LinkState.UP:
                yield Change(Severity.CRITICAL, "link_down",
                             f"{_label(gpu)} link {port.link} is gone (was up)")
            continue
        now = new[key][1]
        name = f"{_label(new[key][0])} link {port.link}"
        if port.state is LinkState.UP and now.state is LinkState.DOWN:
            yield Change(Severity.CRITICAL, "link_down", f"{name} went down")
        elif port.state is LinkState.DOWN and now.state is LinkState.UP:
            yield Change(Severity.INFO, "link_up", f"{name} came up")
        elif port.speed_bps and now.speed_bps and now.speed_bps < port.speed_bps:
            yield Change(Severity.WARNING, "link_slower", f"{name} speed "
                         f"{port.speed_bps / 1e9:.1f} -> {now.speed_bps / 1e9:.1f} GB/s")


def _link_counters(snap: Snapshot) -> dict[tuple[str, int], tuple[GpuInfo, LinkCounters]]:
    gpus = {g.index: g for g in snap.inventory.gpus}
    return {(gpus[c.gpu].uuid, c.link): (gpus[c.gpu], c) for c in snap.counters.links
            if c.gpu in gpus}


def _counters(before: Snapshot, after: Snapshot) -> Iterator[Change]:
    old = _link_counters(before)
    for key, (gpu, now) in _link_counters(after).items():
        if key not in old:
            continue
        was = old[key][1]
        for name in (*UNCORRECTED, *CORRECTED):
            a, b = getattr(was, name), getattr(now, name)
            if a is None or b is None or a == b:
                continue
            where = f"{_label(gpu)} link {now.link} {name.replace('_', ' ')}"
            if b < a:
                yield Change(Severity.INFO, "counter_reset",
                             f"{where} errors went back {a} -> {b} (counter reset)")
            else:
                severity = Severity.WARNING if name in UNCORRECTED else Severity.INFO
                yield Change(severity, "errors_grew", f"{where} errors +{b - a} ({a} -> {b})")
    yield from _pcie_replays(before, after)


def _pcie_replays(before: Snapshot, after: Snapshot) -> Iterator[Change]:
    old_uuid = {g.index: g.uuid for g in before.inventory.gpus}
    old = {old_uuid[i]: n for i, n in before.counters.pcie_replay.items() if i in old_uuid}
    for gpu in after.inventory.gpus:
        now, was = after.counters.pcie_replay.get(gpu.index), old.get(gpu.uuid)
        if now is not None and was is not None and now > was:
            yield Change(Severity.WARNING, "pcie_replays_grew",
                         f"{_label(gpu)} PCIe replays +{now - was} ({was} -> {now})")


def _fabric_manager(before: Snapshot, after: Snapshot) -> Iterator[Change]:
    old, new = before.inventory.fabric_manager, after.inventory.fabric_manager
    if old is None or new is None or old.running == new.running:
        return
    if old.running and new.running is False:
        yield Change(Severity.CRITICAL, "fabric_manager_stopped",
                     f"Fabric Manager stopped ({new.how or 'not running'})")
    elif new.running:
        yield Change(Severity.INFO, "fabric_manager_started",
                     f"Fabric Manager started ({new.how})")
    else:
        yield Change(Severity.WARNING, "fabric_manager_unknown",
                     f"Fabric Manager state unknown now ({new.how or 'could not look'})")
