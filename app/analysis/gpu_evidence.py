"""Which GPUs a host has that NVML does not list now, from the probe's evidence: the NVIDIA
functions on the PCI bus (a GPU that fell off the bus usually stays there), the GPUs the
agent saw since boot, and the count the host should have (`expected`: its operator's or
scheduler's word; the GPUs it names beyond the others get the next free indexes). Pure.

This is what makes "healthy" mean complete: without it a GPU absent from the first report a
server sees (a new server, a wiped database, an agent restarted after the fault) is never
missed, and the host reads "7 GPUs, 42 pairs and 126 links healthy".

A missing GPU needs an index to be judged and paged like any other. In order: the index the
server already has for its PCI address, the index NVML gave it when it was seen since boot,
its position among the PCI functions (NVML numbers GPUs in PCI order), else the next index
no GPU uses; an index a present GPU holds is never taken.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from peerwatch.probes.report import GpuEvidence, GpuInfo
from peerwatch.probes.topology import normalize_bus_id


@dataclass(frozen=True)
class MissingGpu:
    index: int
    pci_bus_id: str  # sysfs' form, 0000:18:00.0
    uuid: str  # "" when NVML never named it (seen on the PCI bus only)
    name: str
    seen_at: datetime | None  # first seen by NVML since boot; None: on the PCI bus only


def bus_key(bus_id: str) -> str:
    return normalize_bus_id(bus_id) or bus_id.strip().lower()


def _pick(key: str, hint: int, known: Mapping[str, int], used: set[int],
          held: set[int]) -> int:
    """The GPU row the server has for this PCI address, else `hint`, else the next free
    index; never one a present GPU holds (`held`) or another address's row uses (`used`)."""
    own = known.get(key)
    if own is not None and own not in held:
        return own
    return hint if hint not in used else max(used, default=-1) + 1


def missing_gpus(evidence: GpuEvidence | None, present: Sequence[GpuInfo],
                 known: Mapping[str, int] | None = None) -> list[MissingGpu]:
    """GPUs the evidence names that the inventory `present` does not list; `known`: the
    index of each GPU row the server has, by PCI address (present or missing)."""
    if evidence is None:
        return []
    known = known or {}
    here = {bus_key(g.pci_bus_id) for g in present}
    uuids = {g.uuid for g in present}
    held = {g.index for g in present}
    used = held | set(known.values())
    found: dict[str, MissingGpu] = {}
    for s in evidence.seen_since_boot or []:
        key = bus_key(s.pci_bus_id)
        if s.uuid in uuids or key in here or key in found:
            continue
        i = _pick(key, s.index, known, used, held)
        used.add(i)
        found[key] = MissingGpu(i, key, s.uuid, s.name or "GPU", s.first_seen_at)
    pci = sorted(bus_key(p.pci_bus_id) for p in evidence.pci or [])
    names = {g.name for g in present}
    name = next(iter(names)) if len(names) == 1 else "NVIDIA GPU"  # its siblings' model
    for position, key in enumerate(pci):
        if key in here or key in found:
            continue
        i = _pick(key, position, known, used, held)
        used.add(i)
        found[key] = MissingGpu(i, key, "", name, None)
    for slot in range((evidence.expected or 0) - len(here) - len(found)):
        key = f"{EXPECTED}{slot}"  # stable across reports: the same row each time
        hole = min(set(range(evidence.expected or 0)) - used, default=max(used, default=-1) + 1)
        i = _pick(key, hole, known, used, held)  # the first index no GPU holds
        used.add(i)
        found[key] = MissingGpu(i, key, "", name, None)
    return sorted(found.values(), key=lambda m: m.index)


EXPECTED = "expected:"  # the address of a GPU known only from the expected count


def expected_only(pci_bus_id: str) -> bool:
    """A missing GPU named by the host's expected count alone: no PCI address, no UUID."""
    return pci_bus_id.startswith(EXPECTED)

