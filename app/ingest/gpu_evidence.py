"""The evidence a host is whole. Rows for the GPUs a report's evidence names that NVML does
not list (app/analysis/gpu_evidence.py): kept with `present = False`, like a GPU the server
saw go, so the judge, `GPUMissing`, the scheduler API and the drain controller treat it as
missing, also when this server never saw it (a new server, a wiped database, an agent
restarted after the fault). And which sweep is full."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.orm import Session

from peerwatch.app.analysis.gpu_evidence import MissingGpu, bus_key, missing_gpus
from peerwatch.app.store.tables.inventory import Gpu
from peerwatch.probes.report import Inventory, Report, ReportKind


def _row(host_id: int, m: MissingGpu, at: datetime) -> dict[str, Any]:
    return {"host_id": host_id, "index": m.index, "uuid": m.uuid, "name": m.name,
            "pci_bus_id": m.pci_bus_id, "memory_total_bytes": 0, "cpu_affinity": None,
            "numa_node": None, "nvlink_count": 0, "pcie": {}, "rdma": {},
            "switch_fabric": None, "nvlink_domain": None, "driver": None, "present": False,
            "last_seen_at": m.seen_at or at}


def store_missing(session: Session, host_id: int, inv: Inventory, at: datetime) -> bool:
    """Add a missing row for each GPU the evidence names and no row holds; True if any.
    One select only when the evidence names a GPU NVML does not list."""
    if not missing_gpus(inv.evidence, inv.gpus):
        return False
    rows = session.execute(select(Gpu.index, Gpu.pci_bus_id).where(Gpu.host_id == host_id))
    known = {bus_key(bus): index for index, bus in rows}
    have = set(known.values())
    new = [_row(host_id, m, at) for m in missing_gpus(inv.evidence, inv.gpus, known)
           if m.index not in have]
    if new:
        session.execute(insert(Gpu), new)
    return bool(new)


def full_sweep(report: Report) -> bool:
    """Every GPU of the report's inventory tested, none skipped, none the evidence names
    missing: a node peerwatch took out returns only after such a sweep was judged."""
    inv = report.inventory
    if report.kind is not ReportKind.SWEEP or report.cost.skipped or not inv.gpus:
        return False
    tested = set().union(*(r.local_gpus() for r in report.results))
    return {g.index for g in inv.gpus} <= tested and not missing_gpus(inv.evidence, inv.gpus)
