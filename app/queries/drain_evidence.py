"""The evidence a host is whole, for `peerwatch drain` (docs/drain.md "Proof before a
return"): how many GPUs each source names (NVML now, the server's GPU rows, the PCI bus,
the GPUs seen since boot) and when the newest full sweep that a judgement has read arrived.
Two selects whatever the fleet's size."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import Integer, case, func, select
from sqlalchemy.orm import Session

from peerwatch.app.store.tables.inventory import Gpu, Host, HostRuntime
from peerwatch.app.store.tables.judged import JudgedHost


@dataclass(frozen=True)
class HostEvidence:
    counts: dict[str, int] = field(default_factory=dict)  # source -> GPUs it names
    full_sweep_at: datetime | None = None  # judged since; the server's clock

    @property
    def present(self) -> int:
        return self.counts.get("nvml", 0)

    @property
    def expected(self) -> int:
        return max(self.counts.values(), default=0)


def _rows(session: Session) -> dict[int, dict[str, int]]:
    present = func.sum(case((Gpu.present.is_(True), 1), else_=0)).cast(Integer)
    return {host_id: {"nvml": int(n or 0), "inventory": int(total)}
            for host_id, n, total in session.execute(
                select(Gpu.host_id, present, func.count()).group_by(Gpu.host_id))}


def _reported(evidence: dict | None) -> dict[str, int]:
    out = {}
    for source, key in (("pci", "pci"), ("seen_since_boot", "seen_since_boot")):
        listed = (evidence or {}).get(key)
        if isinstance(listed, list):
            out[source] = len(listed)
    expected = (evidence or {}).get("expected")
    if isinstance(expected, int):  # the agent's PEERWATCH_PROBE_EXPECTED_GPUS
        out["expected"] = expected
    return out


def host_evidence(session: Session) -> dict[int, HostEvidence]:
    """By host id. A full sweep counts once a judgement was made after it arrived (the
    fast path of an unchanged host moves `judged_at` too)."""
    counts = _rows(session)
    out = {}
    for host_id, evidence, full, judged in session.execute(
            select(Host.id, HostRuntime.gpu_evidence, Host.full_sweep_at, JudgedHost.judged_at)
            .outerjoin(HostRuntime, HostRuntime.host_id == Host.id)
            .outerjoin(JudgedHost, JudgedHost.host_id == Host.id)):
        seen = full if full is not None and judged is not None and judged >= full else None
        out[host_id] = HostEvidence({**counts.get(host_id, {"nvml": 0, "inventory": 0}),
                                     **_reported(evidence)}, seen)
    return out
