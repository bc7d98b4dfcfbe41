"""Upsert a host's inventory (host, GPUs, NVLink ports, pairs) from a report.

Inventory rows hold the latest known shape of the host; only what changed is written. A
report older than what the host already reported (a spooled report delivered late) adds its
history but leaves the inventory alone, so a replay of yesterday never hides a link that
went down this morning. Rows missing from the newest inventory are kept with
`present = False`: a GPU that fell off the bus is a finding, not something to forget.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.models import Gpu, Host, NvLink, Pair
from probes.report import (
    CounterSample,
    GpuInfo,
    HostIdentity,
    Inventory,
    NvLinkPort,
    PairInfo,
)


def get_or_create_host(session: Session, identity: HostIdentity, at: datetime) -> Host:
    host = session.scalar(select(Host).where(Host.name == identity.hostname))
    if host is None:
        host = Host(name=identity.hostname, fabric=identity.fabric, first_seen=at)
        session.add(host)
        session.flush()
    return host


def is_newest(host: Host, finished_at: datetime) -> bool:
    return host.last_report_at is None or finished_at >= host.last_report_at


def update_identity(host: Host, identity: HostIdentity) -> None:
    host.fabric = identity.fabric
    host.driver_version = identity.driver_version
    host.cuda_version = identity.cuda_version
    host.probe_version = identity.probe_version


def _gpu_fields(g: GpuInfo, at: datetime) -> dict[str, Any]:
    return {
        "uuid": g.uuid, "name": g.name, "pci_bus_id": g.pci_bus_id,
        "memory_total_bytes": g.memory_total_bytes, "cpu_affinity": g.cpu_affinity,
        "numa_node": g.numa_node, "nvlink_count": g.nvlink_count,
        "pcie": g.pcie.model_dump(mode="json"), "rdma": g.rdma.model_dump(mode="json"),
        "switch_fabric": g.switch_fabric.model_dump(mode="json") if g.switch_fabric else None,
        "present": True, "last_seen_at": at,
    }


def _link_fields(p: NvLinkPort, at: datetime) -> dict[str, Any]:
    return {
        "state": p.state.value, "version": p.version, "speed_bps": p.speed_bps,
        "remote_type": p.remote_type.value, "remote_pci_bus_id": p.remote_pci_bus_id,
        "remote_gpu": p.remote_gpu, "capabilities": dict(p.capabilities), "present": True,
        "updated_at": at,
    }


def _pair_fields(p: PairInfo, at: datetime) -> dict[str, Any]:
    return {
        "topology": p.topology, "pcie_path": p.pcie_path.value, "nvlink_width": p.nvlink_width,
        "via_nvswitch": p.via_nvswitch, "p2p": {k.value: v.value for k, v in p.p2p.items()},
        "can_access_peer": p.can_access_peer, "present": True, "updated_at": at,
    }


# `updated_at` says when a port or pair last *changed*; a GPU's `last_seen_at` moves with
# every inventory. Unchanged rows are not written, so a steady host costs few UPDATEs.
STAMPS = ("updated_at", "last_seen_at")


def _stamps(fields: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if k in STAMPS}


def _sync(session: Session, model: Any, host_id: int, key_cols: tuple[str, ...],
          wanted: dict[tuple[int, ...], dict[str, Any]]) -> bool:
    """Make `model`'s rows of this host match `wanted` (keyed by `key_cols`); True when
    anything but a time stamp changed."""
    existing = {
        tuple(getattr(row, c) for c in key_cols): row
        for row in session.scalars(select(model).where(model.host_id == host_id))
    }
    any_change = False
    for key, fields in wanted.items():
        row = existing.pop(key, None)
        if row is None:
            session.add(model(host_id=host_id, **dict(zip(key_cols, key, strict=True)), **fields))
            any_change = True
        else:
            changed = {k: v for k, v in fields.items()
                       if k not in STAMPS and getattr(row, k) != v}
            any_change = any_change or bool(changed)
            if changed or "last_seen_at" in fields:
                for name, value in {**changed, **_stamps(fields)}.items():
                    setattr(row, name, value)
    for row in existing.values():
        any_change = any_change or row.present
        row.present = False
    return any_change


def upsert_inventory(session: Session, host: Host, inv: Inventory, at: datetime) -> bool:
    """Store the newest inventory; True when it differs from the one stored before."""
    gpus = _sync(session, Gpu, host.id, ("index",),
                 {(g.index,): _gpu_fields(g, at) for g in inv.gpus})
    links = _sync(session, NvLink, host.id, ("gpu", "link"),
                  {(p.gpu, p.link): _link_fields(p, at) for p in inv.nvlinks})
    pairs = _sync(session, Pair, host.id, ("src", "dst"),
                  {(p.src, p.dst): _pair_fields(p, at) for p in inv.pairs})
    return gpus or links or pairs


def judged_error_total(counters: Sequence[CounterSample]) -> int | None:
    """The judged error counters (replay, recovery, CRC flit, PCIe replay) of the newest
    counter sample, summed: when it has not moved, no link or GPU error rate can have grown."""
    if not counters:
        return None
    newest = max(counters, key=lambda c: c.at)
    total = sum((c.replay or 0) + (c.recovery or 0) + (c.crc_flit or 0) for c in newest.links)
    return total + sum(v or 0 for v in newest.pcie_replay.values())
