"""A report's Xid/SXid events as `fabric_events` rows, inserted in the report's own
transaction by `ingest.py` (whole with the report, or not at all)."""

from __future__ import annotations

from typing import Any

from peerwatch.probes.report import Report


def event_rows(report: Report, host_id: int, report_pk: int) -> list[dict[str, Any]]:
    return [{
        "report_id": report_pk, "host_id": host_id, "at": e.at, "kind": e.kind.value,
        "code": e.code, "gpu": e.gpu, "link": e.link, "switch": e.switch,
        "pci_bus_id": e.pci_bus_id, "subcode": e.subcode, "fatal": e.fatal, "count": e.count,
        "sources": ",".join(s.value for s in e.sources), "message": e.message,
    } for e in report.events]
