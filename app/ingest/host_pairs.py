"""A report's cross-host results (`peer_host` set) as `host_pair_results` rows: stored by
the same transaction as the rest of the report, judged by the network evaluation
(app/judging/network.py), never as one of the host's own pairs."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from peerwatch.app.services.network import result_row
from peerwatch.probes.report import Report, TransferResult


def cross_host(r: TransferResult) -> bool:
    return r.peer_host is not None


def host_pair_rows(report: Report, now: datetime) -> list[dict[str, Any]]:
    return [result_row(report.host.hostname, r, r.started_at or report.started_at, now)
            for r in report.results if cross_host(r)]
