"""Keep each host's probe start, driver load time, Fabric Manager state, IMEX state, RDMA
NICs and GPU evidence (the NVIDIA PCI functions, the GPUs seen since boot) from its newest
report (one row per host in `host_runtime`, replaced in place)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.orm import Session

from peerwatch.app.store.tables.inventory import HostRuntime
from peerwatch.probes.report import Report


def record_runtime(session: Session, host_id: int, report: Report, now: datetime) -> bool:
    """Called by ingest for the host's newest report only (a late spooled one says nothing
    about now). Older probes send none of these: the row then holds Nones. True when the
    Fabric Manager state or the GPU evidence changed: the host's verdict must be judged again
    (start times only hold pages back, they change no verdict)."""
    fm, evidence = report.inventory.fabric_manager, report.inventory.evidence
    imex = report.inventory.imex
    nics = [n.model_dump(mode="json") for n in report.inventory.nics] or None
    fields = {"probe_started_at": report.host.probe_started_at,
              "driver_loaded_at": report.host.driver_loaded_at,
              "fabric_manager": fm.model_dump(mode="json") if fm is not None else None,
              "gpu_evidence": evidence.model_dump(mode="json") if evidence else None,
              "imex": imex.model_dump(mode="json") if imex is not None else None,
              "nics": nics}
    row = session.get(HostRuntime, host_id)
    if row is None:
        session.add(HostRuntime(host_id=host_id, updated_at=now, **fields))
        return fm is not None or evidence is not None or imex is not None or bool(nics)
    changed = (row.fabric_manager != fields["fabric_manager"]
               or row.gpu_evidence != fields["gpu_evidence"] or row.imex != fields["imex"]
               or row.nics != fields["nics"])
    for name, value in fields.items():
        setattr(row, name, value)
    row.updated_at = now
    return changed
