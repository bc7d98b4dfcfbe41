"""An RDMA port's state or error counters moving sends the next inventory in full; its
traffic counters (data, packets, transmit waits) moving alone does not
(probes/agent/changes.py `fingerprint`)."""

from __future__ import annotations

from peerwatch.probes.agent.changes import fingerprint
from peerwatch.probes.report import Report, ReportKind
from peerwatch.probes.sim.simulated import SimulatedFabric
from peerwatch.probes.sweep import build_report


def _with_port(report: Report, **changes: object) -> Report:
    """`report` with its newest sample's first NIC port changed (counters merged)."""
    data = report.model_dump(mode="json")
    port = data["counters"][-1]["nic_ports"][0]
    port["counters"].update(changes.pop("counters", {}))
    port.update(changes)
    return Report.model_validate(data)


def test_nic_errors_and_state_change_the_fingerprint_traffic_does_not() -> None:
    report = build_report(SimulatedFabric("hgx8", seed=2), ReportKind.INVENTORY)
    assert report.counters[-1].nic_ports, "the hgx8 preset has RDMA NICs"
    base = fingerprint(report)
    port = report.counters[-1].nic_ports[0]
    data = port.counters.get("port_xmit_data", 0)
    busy = _with_port(report, counters={"port_xmit_data": data + 10**9,
                                        "port_xmit_wait": 10**7})
    assert fingerprint(busy) == base
    downed = port.counters.get("link_downed", 0) + 1
    assert fingerprint(_with_port(report, counters={"link_downed": downed})) != base
    assert fingerprint(_with_port(report, state="DOWN")) != base
