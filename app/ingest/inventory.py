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

from peerwatch.app.analysis.domains import domain_key
from peerwatch.app.analysis.nic_health import judged_total
from peerwatch.app.ingest.gpu_evidence import store_missing
from peerwatch.app.ingest.host_row import HostState
from peerwatch.app.ingest.host_runtime import record_runtime
from peerwatch.app.store.inventory_memo import MEMO_KEY, InventoryMemo
from peerwatch.app.store.tables.inventory import Gpu, NvLink, Pair
from peerwatch.probes.gpu_health import AER_KINDS
from peerwatch.probes.report import CounterSample, GpuInfo, Inventory, NvLinkPort, PairInfo, Report


def _gpu_fields(g: GpuInfo, at: datetime) -> dict[str, Any]:
    return {
        "uuid": g.uuid, "name": g.name, "pci_bus_id": g.pci_bus_id,
        "memory_total_bytes": g.memory_total_bytes, "cpu_affinity": g.cpu_affinity,
        "numa_node": g.numa_node, "nvlink_count": g.nvlink_count,
        "pcie": g.pcie.model_dump(mode="json"), "rdma": g.rdma.model_dump(mode="json"),
        "switch_fabric": g.switch_fabric.model_dump(mode="json") if g.switch_fabric else None,
        "nvlink_domain": domain_key(g.switch_fabric.cluster_uuid) if g.switch_fabric else None,
        "driver": g.driver.model_dump(mode="json") if g.driver else None,
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


# `updated_at` says when a port or pair last *changed*. A GPU's `last_seen_at` is written
# when its row changes and when it goes missing (then: the host's report before, the last
# that listed it); a present GPU was seen in the host's newest report (`last_report_at`),
# so an unchanged inventory writes no GPU row at all.
STAMPS = ("updated_at", "last_seen_at")


def _stamps(fields: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if k in STAMPS}


def _sync(session: Session, model: Any, host_id: int, key_cols: tuple[str, ...],
          wanted: dict[tuple[int, ...], dict[str, Any]],
          gone_values: dict[str, Any] | None = None) -> bool:
    """Make `model`'s rows of this host match `wanted` (keyed by `key_cols`); True when
    anything but a time stamp changed. Rows no longer wanted get `present = False` and
    `gone_values`.

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
        if changed:
            updates.append({**changed, **_stamps(fields), "pk": pk})
    if inserts:
        session.execute(insert(model), inserts)
    for same_columns in _grouped(updates):  # one executemany per set of changed columns
        session.connection().execute(update(model).where(table.c.id == bindparam("pk")),
                                     same_columns)
    gone = [pk for pk, stored in existing.values() if stored["present"]]
    if gone:
        session.connection().execute(
            update(model).where(table.c.id.in_(gone)).values(present=False,
                                                             **(gone_values or {})))
    return bool(inserts or gone or updates)


def _grouped(updates: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    groups: dict[frozenset[str], list[dict[str, Any]]] = {}
    for u in updates:
        groups.setdefault(frozenset(u), []).append(u)
    return list(groups.values())


_PENDING_KEY = "peerwatch.inventory_pending"
LINKS_PENDING_KEY = "peerwatch.links_pending"  # app/ingest/sparse_links.py
NICS_PENDING_KEY = "peerwatch.nics_pending"  # app/ingest/sparse_nics.py


def _fingerprint(report: Report, inventory_json: bytes) -> bytes:
    """What the memo compares: the inventory (as JSON, `inventory_json`) and the runtime
    fields stored beside it."""
    runtime = f"|{report.host.probe_started_at}|{report.host.driver_loaded_at}".encode()
    return hashlib.blake2b(inventory_json + runtime, digest_size=16).digest()


def remember_committed(session: Session) -> None:
    """After a commit: the inventory written in it is now what the memo may trust."""
    pending = session.info.pop(_PENDING_KEY, None)
    links = session.info.pop(LINKS_PENDING_KEY, None)
    nics = session.info.pop(NICS_PENDING_KEY, None)
    memo = session.info.get(MEMO_KEY)
    if pending is not None and memo is not None:
        memo.remember(*pending)
    if links is not None and memo is not None:
        memo.remember_links(*links)
    if nics is not None and memo is not None:
        memo.remember_nics(*nics)


def forget_uncommitted(session: Session) -> None:
    session.info.pop(_PENDING_KEY, None)
    session.info.pop(LINKS_PENDING_KEY, None)
    session.info.pop(NICS_PENDING_KEY, None)


def store_inventory(session: Session, host: HostState, report: Report, now: datetime,
                    inventory_json: bytes) -> bool:
    """Store the newest report's inventory (`inventory_json`: it serialized, for the memo)
    and runtime (probe and driver start, Fabric Manager) as of its finish (which becomes
    the host's `last_report_at`); True when either differs from what was stored before in a
    way that needs a new judgement.

    The fast path: when this process's memo says the host still shows the inventory and
    runtime this process committed last, nothing is written (nor the host_runtime row even
    read: its `updated_at` says when it last changed)."""
    memo: InventoryMemo | None = session.info.get(MEMO_KEY)
    fingerprint = _fingerprint(report, inventory_json) if memo is not None else None
    if memo is not None and fingerprint is not None and memo.unchanged(host, fingerprint):
        changed = False
    else:
        changed = _upsert(session, host, report.inventory, report.finished_at)
        changed = record_runtime(session, host.id, report, now) or changed  # Fabric Manager
    if fingerprint is not None:
        session.info[_PENDING_KEY] = (host.id, fingerprint, report.finished_at)
    return changed


def _upsert(session: Session, host: HostState, inv: Inventory, at: datetime) -> bool:
    # a GPU gone was last seen in the report before this one (it listed it: it was stored)
    gone_gpu = {"last_seen_at": host.last_report_at} if host.last_report_at else None
    gpus = _sync(session, Gpu, host.id, ("index",),
                 {(g.index,): _gpu_fields(g, at) for g in inv.gpus}, gone_gpu)
    gpus = store_missing(session, host.id, inv, at) or gpus  # named by the GPU evidence
    links = _sync(session, NvLink, host.id, ("gpu", "link"),
                  {(p.gpu, p.link): _link_fields(p, at) for p in inv.nvlinks})
    pairs = _sync(session, Pair, host.id, ("src", "dst"),
                  {(p.src, p.dst): _pair_fields(p, at) for p in inv.pairs})
    return gpus or links or pairs


def judged_error_total(counters: Sequence[CounterSample]) -> int | None:
    """The judged error counters (replay, recovery, CRC flit, PCIe replay) of the newest
    counter sample, summed: when it has not moved, no link, GPU or NIC error rate can have grown."""
    if not counters:
        return None
    newest = max(counters, key=lambda c: c.at)
    total = sum((c.replay or 0) + (c.recovery or 0) + (c.crc_flit or 0) for c in newest.links)
    total += sum(a.total(kind) or 0 for a in newest.aer for kind in AER_KINDS)  # AER too
    total += judged_total(newest.nic_ports)  # and the RDMA NIC ports' (nic_health.py)
    return total + sum(v or 0 for v in newest.pcie_replay.values())
