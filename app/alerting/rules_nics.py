"""The alerts for a host's RDMA NIC ports (app/analysis/nic_health.py):

    NICPortDown           critical  an RDMA NIC port is not ACTIVE (DOWN, INIT, ARMED)
    NICPortFlapping       warning   link_downed grew: the link went down and came back
    NICLinkErrorsRising   warning   symbol/receive/link integrity errors grow above limit
    NICRateDegraded       warning   the port trained below the rate of its kind on the host
    NICPortCongested      warning   transmit discards (or transmit waits above limit) grow

Labels host, nic, port, kind. Each reads the NIC verdicts stored with the host's judgement
(never judging again); the PromQL twins read what /metrics exports of them
(`peerwatch_nic_port_problem{nic, port, kind}`).
"""

from __future__ import annotations

from collections.abc import Callable

from peerwatch.app.alerting.context import HostContext
from peerwatch.app.alerting.promql import Twin
from peerwatch.app.alerting.rule import Finding, Rule

SERIES = "peerwatch_nic_port_problem"


def _check(kind: str) -> Callable[[HostContext], list[Finding]]:
    def check(ctx: HostContext) -> list[Finding]:
        out = []
        for port in ctx.health.nics:
            for f in port.get("findings", ()):
                if f["kind"] != kind:
                    continue
                name = f"{port['nic']} port {port['port']}"
                out.append(Finding(
                    labels={"host": ctx.name, "nic": port["nic"], "port": str(port["port"]),
                            "kind": kind},
                    summary=f"{name} on {ctx.name}: {f['words']}",
                    description=port["reason"],
                    dashboard=f"/#/host/{ctx.name}?nic={port['nic']}", value=1.0))
        return out
    return check


def _rule(name: str, severity: str, kind: str, doc: str, summary: str,
          description: str) -> Rule:
    return Rule(
        name, severity, 0.0, _check(kind), f"{doc}. PromQL: `{SERIES}{{kind=\"{kind}\"}}`",
        label_names="host, nic, port, kind", series=(SERIES,),
        twins=(Twin(
            note=("The server's stored NIC port verdict: state, rate and the counters' rates "
                  "(app/analysis/nic_health.py)."),
            expr=f'max by (host, nic, port, kind) ({SERIES}{{kind="{kind}"}}) == 1',
            for_="0m",
            annotations={
                "summary": f"{{{{ $labels.nic }}}} port {{{{ $labels.port }}}} on "
                           f"{{{{ $labels.host }}}} {summary}",
                "description": description,
                "dashboard": "/#/host/{{ $labels.host }}?nic={{ $labels.nic }}",
            }),))


NIC_RULES: tuple[Rule, ...] = (
    _rule("NICPortDown", "critical", "down",
          "an RDMA NIC port (InfiniBand or RoCE) is not ACTIVE: no traffic through it "
          "([network.md](network.md))",
          "is down",
          "The RDMA port is not ACTIVE: check the cable, the switch port and the subnet "
          "manager (ibstat)."),
    _rule("NICPortFlapping", "warning", "flap",
          "the port's link_downed counter grew over the link-rate window: the link failed "
          "error recovery, went down and came back",
          "is flapping",
          "The RDMA port went down and came back (link_downed rising): reseat or replace "
          "the cable or transceiver."),
    _rule("NICLinkErrorsRising", "warning", "link_errors",
          "symbol, receive, local link integrity or buffer overrun errors grow above "
          "0.01/s over the link-rate window",
          "logs rising link errors",
          "Physical-layer errors are rising on the RDMA port: clean or replace the cable "
          "or transceiver before the link fails."),
    _rule("NICRateDegraded", "warning", "rate",
          "the port trained below the best rate of a port of the same NIC type and link "
          "layer on the host (lanes down, a lower speed)",
          "trained below its rate",
          "The RDMA port runs below the rate of its kind on this host: reseat the cable, "
          "check the switch port's speed."),
    _rule("NICPortCongested", "warning", "congestion",
          "port_xmit_discards grew (packets dropped: port down or congested) or "
          "port_xmit_wait grew above its limit",
          "is congested",
          "The RDMA port drops or waits to transmit: look at the fabric (switch, spine) "
          "the cross-host tests point to."),
)
