"""Upsert a host's inventory (host, GPUs, NVLink ports, pairs) from a report.

Inventory rows hold the latest known shape of the host; only what changed is written. A
report older than what the host already reported (a spooled report delivered late) adds its
history but leaves the inventory alone, so a replay of yesterday never hides a link that
went down this morning. Rows missing from the newest inventory are kept with
`present = False`: a GPU that fell off the bus is a finding, not something to forget.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, insert, select, update
from sqlalchemy.orm import Session

from app.analysis.domains import domain_key
from app.models import Gpu, Host, NvLink, Pair
from app.services.host_runtime import record_runtime
from probes.report import (
    CounterSample,
    GpuInfo,
    HostIdentity,
    Inventory,
    NvLinkPort,
    PairInfo,
    Report,
)


def get_or_create_host(session: Session, identity: HostIdentity, at: datetime) -> Host:
    """The host's row, locked until commit (PostgreSQL): two replicas ingesting reports of
    one host at once take turns, so neither writes its inventory over rows it did not see."""
    host = session.scalar(select(Host).where(Host.name == identity.hostname)
                          .with_for_update(key_share=True))
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
        "nvlink_domain": domain_key(g.switch_fabric.cluster_uuid) if g.switch_fabric else None,
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
    anything but a time stamp changed.

    Plain rows in, executemany out: a steady 8-GPU host is ~200 rows compared and a handful
    written, and ORM objects for each would cost more than the writes."""
    table = model.__table__
    compared = ["present", *(c for c in next(iter(wanted.values()), {})
                             if c not in STAMPS and c != "present")]
    columns = [table.c.id, *(table.c[c] for c in key_cols), *(table.c[c] for c in compared)]
    first = 1 + len(key_cols)
    existing = {
        tuple(row[1:first]): (row[0], dict(zip(compared, row[first:], strict=True)))
        for row in session.execute(select(*columns).where(table.c.host_id == host_id))
    }
    inserts, updates = [], []
    for key, fields in wanted.items():
        found = existing.pop(key, None)
        if found is None:
            inserts.append({"host_id": host_id, **dict(zip(key_cols, key, strict=True)),
                            **fields})
            continue
        pk, stored = found
        changed = {k: v for k, v in fields.items() if k not in STAMPS and stored[k] != v}
        if changed or "last_seen_at" in fields:
            updates.append({**changed, **_stamps(fields), "pk": pk})
    if inserts:
        session.execute(insert(model), inserts)
    for same_columns in _grouped(updates):  # one executemany per set of changed columns
        session.connection().execute(update(model).where(table.c.id == bindparam("pk")),
                                     same_columns)
    gone = [pk for pk, stored in existing.values() if stored["present"]]
    if gone:
        session.connection().execute(
            update(model).where(table.c.id.in_(gone)).values(present=False))
    return bool(inserts or gone or any(set(u) - {"pk", *STAMPS} for u in updates))


def _grouped(updates: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    groups: dict[frozenset[str], list[dict[str, Any]]] = {}
    for u in updates:
        groups.setdefault(frozenset(u), []).append(u)
    return list(groups.values())


class InventoryMemo:
    """What this process last committed as each host's inventory: its fingerprint and the
    host's `last_report_at` it set. If the host still shows that `last_report_at`, no report
    has rewritten the inventory since (every rewrite moves it, whichever replica made it),
    so an unchanged inventory needs only its GPUs' `last_seen_at` bumped. One per app, put
    in `session.info[MEMO_KEY]` by the sessionmaker; sessions without one always compare."""

    def __init__(self) -> None:
        self._stored: dict[int, tuple[bytes, datetime]] = {}

    def unchanged(self, host: Host, fingerprint: bytes) -> bool:
        return (host.last_report_at is not None
                and self._stored.get(host.id) == (fingerprint, host.last_report_at))

    def remember(self, host_id: int, fingerprint: bytes, version: datetime) -> None:
        self._stored[host_id] = (fingerprint, version)


MEMO_KEY = "peerwatch.inventory_memo"
_PENDING_KEY = "peerwatch.inventory_pending"


def _fingerprint(report: Report) -> bytes:
    """What the memo compares: the inventory and the runtime fields stored beside it."""
    runtime = f"|{report.host.probe_started_at}|{report.host.driver_loaded_at}".encode()
    return hashlib.blake2b(report.inventory.model_dump_json().encode() + runtime,
                           digest_size=16).digest()


def remember_committed(session: Session) -> None:
    """After a commit: the inventory written in it is now what the memo may trust."""
    pending = session.info.pop(_PENDING_KEY, None)
    memo = session.info.get(MEMO_KEY)
    if pending is not None and memo is not None:
        memo.remember(*pending)


def forget_uncommitted(session: Session) -> None:
    session.info.pop(_PENDING_KEY, None)


def store_inventory(session: Session, host: Host, report: Report, now: datetime) -> bool:
    """Store the newest report's inventory and runtime (probe and driver start, Fabric
    Manager) as of its finish (which becomes the host's `last_report_at`); True when either
    differs from what was stored before in a way that needs a new judgement.

    The fast path: when this process's memo says the host still shows the inventory and
    runtime this process committed last, the only write is the GPUs' `last_seen_at` (the
    host_runtime row is not even read: its `updated_at` says when it last changed)."""
    memo: InventoryMemo | None = session.info.get(MEMO_KEY)
    at = report.finished_at
    if memo is None:
        return _upsert(session, host, report.inventory, at) | record_runtime(
            session, host, report, now)
    fingerprint = _fingerprint(report)
    changed = False
    if memo.unchanged(host, fingerprint):
        session.execute(update(Gpu).where(Gpu.host_id == host.id, Gpu.present.is_(True))
                        .values(last_seen_at=at))
    else:
        changed = _upsert(session, host, report.inventory, at)
        changed = record_runtime(session, host, report, now) or changed  # Fabric Manager
    session.info[_PENDING_KEY] = (host.id, fingerprint, at)
    return changed


def _upsert(session: Session, host: Host, inv: Inventory, at: datetime) -> bool:
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
