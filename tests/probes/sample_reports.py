"""Small valid reports for the spool and delivery tests (no fabric needed)."""

from __future__ import annotations

from datetime import datetime, timedelta

from peerwatch.probes.report import (
    GpuInfo,
    HostIdentity,
    Inventory,
    Report,
    ReportKind,
    TestName,
    TransferResult,
    Unit,
    utcnow,
)


def sample_report(hostname: str = "spool-test", at: datetime | None = None,
                  padding: int = 0) -> Report:
    """A two-GPU sweep report; `padding` grows it (an error message) to fill a spool."""
    start = at or utcnow()
    gpus = [GpuInfo(index=i, uuid=f"GPU-{hostname}-{i}", name="sim", pci_bus_id=f"0000:0{i}:00.0",
                    memory_total_bytes=1 << 30) for i in range(2)]
    results = [TransferResult(test=TestName.CE_WRITE, src=0, dst=1, value=3.9e11,
                              unit=Unit.BYTES_PER_SECOND, samples=[3.9e11])]
    if padding:
        results.append(TransferResult(test=TestName.CE_READ, src=1, dst=0,
                                       unit=Unit.BYTES_PER_SECOND, error="x" * padding))
    return Report(kind=ReportKind.SWEEP, host=HostIdentity(hostname=hostname, fabric="simulated:t"),
                  started_at=start, finished_at=start + timedelta(seconds=1),
                  inventory=Inventory(gpus=gpus), results=results)
