"""The rules of the network between hosts (docs/network.md), one per triangulated fault:

    NetworkHostPathSlow  warning   a host slow with every partner: its NIC, cable or PCIe path
    NetworkPathSlow      warning   two hosts slow only together: the path between them
    NetworkLeafSlow      critical  every tested host under a leaf slow: the leaf switch
    NetworkSpineSlow     critical  every pair crossing a spine group slow: the spine

They are fleet-wide, not one host's: the network evaluation (app/judging/network.py) runs
`network_findings` over the triangulation and keeps their alerts under the host column
`NETWORK_SCOPE`; a host's own evaluation finds none of them (`_none`). The twins apply the
same rules to `peerwatch_host_pair_slow` (app/alerting/promql_network.py).
"""

from __future__ import annotations

from peerwatch.app.alerting.context import HostContext
from peerwatch.app.alerting.promql import Twin
from peerwatch.app.alerting.promql_network import HOST_EXPR, LEAF_EXPR, PATH_EXPR, SPINE_EXPR
from peerwatch.app.alerting.rule import Finding, Rule
from peerwatch.app.analysis.network import NetFault, NetworkJudgement

NETWORK_SCOPE = "(network)"  # the alerts' host column: no host name can be this
DASHBOARD = "/api/v1/network/pairs"
SERIES = ("peerwatch_host_pair_slow",)


def _none(ctx: HostContext) -> list[Finding]:
    """Fleet-wide: never found in one host's evaluation."""
    return []


def _finding(f: NetFault, labels: dict[str, str]) -> Finding:
    return Finding(labels=labels, summary=f.reason.split(":")[0], description=f.reason,
                   dashboard=DASHBOARD, value=f.ratio)


def network_findings(j: NetworkJudgement) -> dict[str, list[Finding]]:
    """Each network rule's findings over one triangulation: rule name -> findings."""
    out: dict[str, list[Finding]] = {r.name: [] for r in NETWORK_RULES}
    for f in j.faults:
        if f.kind == "host":
            out["NetworkHostPathSlow"].append(_finding(f, {"host": f.subject}))
        elif f.kind == "path" and f.resolved:
            a, b = f.subject.split("~")
            out["NetworkPathSlow"].append(_finding(f, {"host": a, "peer_host": b}))
        elif f.kind == "leaf":
            out["NetworkLeafSlow"].append(_finding(f, {"switch": f.subject}))
        elif f.kind == "spine":
            out["NetworkSpineSlow"].append(_finding(f, {"switch": f.subject}))
    return out


def _twin(expr: str, summary: str, description: str) -> Twin:
    return Twin(expr=expr, for_="0m", annotations={
        "summary": summary, "description": description, "dashboard": DASHBOARD})


NETWORK_RULES: tuple[Rule, ...] = (
    Rule("NetworkHostPathSlow", "warning", 0.0, _none,
         "a host is slow with every one of its tested partners (at least two), not explained "
         "by a bad leaf or spine: its NIC, cable or PCIe path to the NIC. One alert, none per "
         "pair. PromQL: `peerwatch:network_host_slow_with_all`",
         label_names="host", series=SERIES,
         twins=(_twin(HOST_EXPR, "{{ $labels.host }} is slow with every network partner",
                      "{{ $labels.host }} is slow with every one of its tested partners: "
                      "its NIC, cable or PCIe path to the NIC."),)),
    Rule("NetworkPathSlow", "warning", 0.0, _none,
         "two hosts slow only together (each with another healthy partner): the path between "
         "them (a cable, a switch port or a route); one per unordered pair",
         label_names="host, peer_host", series=SERIES,
         twins=(_twin(PATH_EXPR, "{{ $labels.host }} and {{ $labels.peer_host }} are slow "
                      "only together", "The path between {{ $labels.host }} and "
                      "{{ $labels.peer_host }}: a cable, a switch port or a route."),)),
    Rule("NetworkLeafSlow", "critical", 0.0, _none,
         "every tested host under a leaf switch (at least two) is slow with every partner: "
         "the leaf switch; one alert for the leaf, none for its hosts",
         label_names="switch", series=SERIES,
         twins=(_twin(LEAF_EXPR, "leaf {{ $labels.switch }}: every host under it is slow",
                      "Every tested host under leaf {{ $labels.switch }} is slow with every "
                      "partner: the leaf switch."),)),
    Rule("NetworkSpineSlow", "critical", 0.0, _none,
         "every tested pair crossing a spine group (at least two, no one host in all) is "
         "slow: the spine (congestion, a bad uplink, routing)",
         label_names="switch", series=SERIES,
         twins=(_twin(SPINE_EXPR, "spine {{ $labels.switch }}: every pair crossing it is slow",
                      "Every tested pair crossing spine group {{ $labels.switch }} is slow: "
                      "congestion, a bad uplink or its routing."),)),
)
