"""`peerwatch bench`'s RDMA NICs: each port judged from the pass's own readings, as JSON
(`nics` in `--json`) and as a table after the matrices."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from peerwatch.app.analysis.nic_health import NicLimits, Reading, judge_nics
from peerwatch.probes.report import Report

NEAR = ("X", "PIX", "PXB", "PHB")  # below the same PCIe switch or root port
SHOWN = ("symbol_error", "port_rcv_errors", "link_downed", "port_xmit_discards")


def nic_document(report: Report) -> list[dict[str, Any]]:
    """Each RDMA NIC port judged from the pass's own readings (before and after a sweep),
    as the server would judge them (app/analysis/nic_health.py): verdict, state, rate,
    counters and their growth per second over the pass."""
    readings: dict[tuple[str, int], list[Reading]] = {}
    for sample in sorted(report.counters, key=lambda c: c.at):
        for p in sample.nic_ports:
            readings.setdefault(p.key, []).append(Reading(
                sample.at, p.state, p.phys_state, p.rate_gbps, p.link_layer, p.counters))
    types = {n.name: n.hca_type for n in report.inventory.nics}
    return [j.as_dict() for j in judge_nics(readings, types, NicLimits())]


def render_nics(console: Console, report: Report) -> None:
    """One row per port; nothing on a host without RDMA NICs."""
    ports = nic_document(report)
    if not ports:
        return
    paths = {n.name: ",".join(f"GPU{g} {lvl}" for g, lvl in sorted(n.gpu_paths.items())
                              if lvl in NEAR) or "none" for n in report.inventory.nics}
    table = Table(box=None, pad_edge=False)
    for column in ("NIC", "port", "state", "rate", "layer", *SHOWN, "verdict", "near GPUs"):
        table.add_column(column)
    for p in ports:
        table.add_row(p["nic"], str(p["port"]), p["state"] or "N/A",
                      f"{p['rate_gbps']:g} Gb/s" if p["rate_gbps"] else "N/A",
                      p["link_layer"] or "N/A",
                      *(str(p["counters"].get(c, "N/A")) for c in SHOWN),
                      p["verdict"], paths.get(p["nic"], ""))
    console.print("[bold]RDMA NICs[/] (counters are lifetime totals, judged by their growth)")
    console.print(table)
    for p in ports:
        if p["verdict"] != "healthy":
            console.print(f"[yellow]{p['reason']}[/]")
