"""The GPUs NVML has listed on this host since it booted, kept in `gpus-seen.state` in the
agent's spool directory and keyed by the kernel's boot id.

Why: a GPU that falls off the bus leaves NVML's list; the server notices only if it knew the
GPU before. Named in every report as seen since boot, it is judged missing also after the
agent restarts and by a server that lost its database. A reboot (a new boot id) starts the
set over: after a reboot NVML and the PCI bus are asked afresh. Deleting the file forgets a
GPU taken out on purpose without a reboot. Where the boot id cannot be read, the set lives
in memory only (a set kept across a reboot it cannot see would name GPUs wrongly).
"""

from __future__ import annotations

import json
import logging
from datetime import datetime
from pathlib import Path

from pydantic import ValidationError

from peerwatch.probes.agent.spool import atomic_write
from peerwatch.probes.report import MAX_GPUS, GpuEvidence, GpuInfo, Report, SeenGpu
from peerwatch.probes.topology import normalize_bus_id

log = logging.getLogger(__name__)

BOOT_ID = Path("/proc/sys/kernel/random/boot_id")
FILE_NAME = "gpus-seen.state"  # JSON inside; not `*.json`, the spooled reports' ending


def read_boot_id(path: Path = BOOT_ID) -> str | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return text[:64] or None


class SeenSinceBoot:
    """The set, updated from each report's inventory; `path` None keeps it in memory."""

    def __init__(self, path: Path | None, boot_id_path: Path = BOOT_ID) -> None:
        self.path = path
        self.boot_id_path = boot_id_path
        self._boot: str | None = None
        self._seen: dict[str, SeenGpu] = {}
        self._warned = False

    def _load(self, boot: str | None) -> dict[str, SeenGpu]:
        if self.path is None or boot is None:
            return {}
        try:
            doc = json.loads(self.path.read_text())
            if doc.get("boot_id") != boot:
                return {}  # written before a reboot
            return {g.uuid: g for g in (SeenGpu.model_validate(x) for x in doc["gpus"])}
        except FileNotFoundError:
            return {}
        except (OSError, ValueError, KeyError, TypeError, AttributeError, ValidationError) as exc:
            log.warning("%s unreadable (%s): starting the seen-since-boot set afresh",
                        self.path, exc)
            return {}

    def _save(self) -> None:
        if self.path is None or self._boot is None:
            return
        doc = {"boot_id": self._boot,
               "gpus": [g.model_dump(mode="json") for g in self._seen.values()]}
        try:
            atomic_write(self.path.parent, self.path.name, json.dumps(doc).encode())
        except OSError as exc:
            if not self._warned:
                log.warning("cannot keep %s (%s): the seen-since-boot set lives in memory",
                            self.path, exc)
                self._warned = True

    def update(self, gpus: list[GpuInfo], at: datetime) -> list[SeenGpu]:
        """Add the GPUs NVML lists now; every GPU seen since boot, by index."""
        boot = read_boot_id(self.boot_id_path)
        if boot != self._boot:  # the first update (or a boot id that changed under it)
            self._seen, self._boot = self._load(boot), boot
        new = [g for g in gpus if g.uuid not in self._seen]
        for g in new:
            self._seen[g.uuid] = SeenGpu(uuid=g.uuid, index=g.index, name=g.name,
                                         pci_bus_id=normalize_bus_id(g.pci_bus_id)
                                         or g.pci_bus_id, first_seen_at=at)
        if new:
            self._save()
        return sorted(self._seen.values(), key=lambda g: (g.index, g.first_seen_at))[:MAX_GPUS]

    def boot_id(self) -> str | None:
        return self._boot


def with_seen(report: Report, seen: SeenSinceBoot | None) -> Report:
    """`report` with the GPUs seen since boot (and the boot id) in its evidence."""
    if seen is None:
        return report
    listed = seen.update(report.inventory.gpus, report.finished_at)
    old = report.inventory.evidence or GpuEvidence()
    evidence = old.model_copy(update={"boot_id": seen.boot_id(), "seen_since_boot": listed})
    inventory = report.inventory.model_copy(update={"evidence": evidence})
    return report.model_copy(update={"inventory": inventory})


def with_expected(report: Report, expected: int | None) -> Report:
    """`report` with the GPU count the host should have in its evidence (None: unchanged)."""
    if expected is None:
        return report
    old = report.inventory.evidence or GpuEvidence()
    inventory = report.inventory.model_copy(
        update={"evidence": old.model_copy(update={"expected": expected})})
    return report.model_copy(update={"inventory": inventory})
