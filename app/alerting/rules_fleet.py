"""The rules of a GPU or a host far below its fleet peers (docs/fleet-peers.md):

    GPUBelowFleetPeers   warning  a GPU's own copies below the same GPU on its peer hosts
    HostBelowFleetPeers  warning  a host's median over its pair tests below the floor: one
                                  alert for the board, none per pair

A pair below its fleet peers is P2PBelowFleetPeers, with the other pair pages
(rules_slow_pairs.py). They read the peer facts stored with the verdicts.
"""

from __future__ import annotations

from peerwatch.app.alerting.context import HostContext
from peerwatch.app.alerting.explains import (
    explained_gpus,
    host_below,
    throttled_gpus,
)
from peerwatch.app.alerting.promql import Twin
from peerwatch.app.alerting.rule import Finding, Rule, dashboard_path
from peerwatch.app.analysis.verdict import Verdict


def gpu_below_fleet_peers(ctx: HostContext) -> list[Finding]:
    """One alert per GPU the server calls degraded for its own copies (h2d, d2h, local)
    being far below the same GPU model on the same PCIe link and driver, while its own tests
    are healthy (else PCIeBandwidthDegraded is the page); none where a fault of the GPU
    explains it (a downtrained link has no group) or it is held below its clocks most of
    the time (GPUThrottled is the page), nor on a host below its peers as a whole."""
    if host_below(ctx):
        return []
    explained = set(explained_gpus(ctx)) | throttled_gpus(ctx)
    out = []
    for g in ctx.health.judgement.gpus:
        peer = ctx.health.gpu_facts.get(g.gpu, {}).get("peer")
        if (g.verdict is not Verdict.DEGRADED or not peer or not peer.get("flagged")
                or g.gpu in explained):
            continue  # the GPU's own tests looked at only for a flagged degraded GPU
        if any(j.verdict is not Verdict.HEALTHY for (s, d, _), j in ctx.health.tests.items()
               if s == d == g.gpu):
            continue
        model, link, driver = peer["group"]
        out.append(Finding(
            labels={"host": ctx.name, "gpu": str(g.gpu)},
            summary=f"GPU{g.gpu} on {ctx.name} is {peer['ratio']:.2f} of its fleet peers "
                    f"({peer['test']})",
            description=f"{g.reason}. Its own baseline may have absorbed the slowdown; the "
                        f"same GPU on {peer['hosts']} {model} {link} hosts (driver {driver}) "
                        "is faster: suspect the slot, riser, retimer or the host side.",
            dashboard=dashboard_path(ctx.name, gpu=g.gpu), value=peer["ratio"]))
    return out


def host_below_fleet_peers(ctx: HostContext) -> list[Finding]:
    """One alert for a host whose median ratio over its checked pair tests is below the floor
    (docs/fleet-peers.md): a slow board, not 56 slow pairs."""
    peers = ctx.health.peers
    if not host_below(ctx) or ctx.health.stale:
        return []
    model, topology, driver = peers.get("group") or ("?", "?", "?")
    gpus = ", ".join(f"GPU{g}" for g in peers.get("gpus_below", []))
    return [Finding(
        labels={"host": ctx.name},
        summary=f"{ctx.name} is {peers['ratio']:.2f} of its fleet peers ({model} {topology}, "
                f"driver {driver}): {peers.get('pairs_below', 0)} pairs below",
        description=f"{ctx.name} is {peers['ratio']:.2f} of its fleet peers: the median over "
                    f"its {peers['checked']} checked pair tests, {peers['flagged']} of them "
                    f"below the floor, {peers.get('pairs_below', 0)} ordered pairs, on "
                    f"{gpus or 'no GPU'}; mostly against {model} {topology} on driver {driver}. "
                    "A whole board slow (power cap, clocks, a bad riser or baseboard): one "
                    "alert for the host, none per pair.",
        dashboard=dashboard_path(ctx.name), value=float(peers["ratio"]))]


FLEET_RULES: tuple[Rule, ...] = (
    Rule("GPUBelowFleetPeers", "warning", 0.0, gpu_below_fleet_peers,
         "the same for a GPU's own copies (h2d, d2h, local) against the same GPU model on the "
         "same PCIe link (max generation x width) and driver; one per GPU; none where its own "
         "tests are degraded (`PCIeBandwidthDegraded`), its PCIe link is downtrained (then it is "
         "in no group), it is held below its clocks most of the time (`GPUThrottled` is the "
         "page), or its host is below as a whole. PromQL: `peerwatch_gpu_fleet_peer_ratio unless "
         "peerwatch_gpu_throttle`",
         label_names="host, gpu",
         series=(
             "peerwatch_gpu_fleet_peer_ratio", "peerwatch_gpu_throttle",
             "peerwatch_host_fleet_peer_ratio",
         ),
         twins=(
             Twin(
                 note=(
                     "A GPU's own copies (h2d, d2h, local) against the same GPU model on the "
                     "same PCIe link and driver; the server groups no GPU whose link is "
                     "downtrained, and leaves a GPU held below its clocks to GPUThrottled "
                     "(`unless on (host, gpu)`)."
                 ),
                 expr=(
                     "min by (host, gpu) (max by (host, gpu, test) "
                     "(peerwatch_gpu_fleet_peer_ratio)) < 0.93\n"
                     "unless on (host) (max by (host) (peerwatch_host_fleet_peer_ratio) < 0.93)\n"
                     "unless on (host, gpu) (max by (host, gpu) (peerwatch_gpu_throttle) == 1)\n"
                 ),
                 for_="0m",
                 annotations={
                     "summary": (
                         "GPU{{ $labels.gpu }} on {{ $labels.host }} is "
                         '{{ $value | printf "%.2f" }} of its fleet peers'
                     ),
                     "description": (
                         "The own copies (host <-> GPU or local) of GPU{{ $labels.gpu }} on "
                         '{{ $labels.host }} are {{ $value | printf "%.2f" }} of the median of '
                         "the same GPU on its peer hosts (same GPU model, PCIe link and "
                         "driver): suspect the slot, riser, retimer or the host side."
                     ),
                     "dashboard": "/#/host/{{ $labels.host }}?gpu={{ $labels.gpu }}",
                 },
             ),
         )),
    Rule("HostBelowFleetPeers", "warning", 0.0, host_below_fleet_peers,
         "the median of a host's pair ratios to their fleet peers is below the floor: a whole "
         "board slow. One alert naming the ratio, the group and the number of pairs below, "
         "instead of one per pair (an 8-GPU board: 1, not 56). PromQL: "
         "`peerwatch_host_fleet_peer_ratio`; the pair and GPU rules leave that host out (`unless "
         "on (host)`)",
         label_names="host",
         series=("peerwatch_host_fleet_peer_ratio",),
         twins=(
             Twin(
                 note=(
                     "The server's median ratio of the host's pair tests to its peer groups, "
                     "exported only for hosts below PEERWATCH_FLEET_PEER_FLOOR: a whole board "
                     "slow is one alert, and the pair and GPU peer alerts of that host are left "
                     "out below (`unless on (host)`)."
                 ),
                 expr="max by (host) (peerwatch_host_fleet_peer_ratio) < 0.93",
                 for_="0m",
                 annotations={
                     "summary": (
                         '{{ $labels.host }} is {{ $value | printf "%.2f" }} of its fleet peers'
                     ),
                     "description": (
                         '{{ $labels.host }} is {{ $value | printf "%.2f" }} of its fleet '
                         "peers: the median of its pair tests over the same pairs on its peer "
                         "hosts (same GPU model, topology and driver). A whole board slow "
                         "(power cap, clocks, a bad riser or baseboard): one alert for the "
                         "host, none per pair."
                     ),
                     "dashboard": "/#/host/{{ $labels.host }}",
                 },
             ),
         )),
)
