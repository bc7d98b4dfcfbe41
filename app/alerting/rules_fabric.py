"""Alert rules for the fabric contradictions of `app/analysis/fabric_state.py`, one alertname
per kind of trouble so that each pages once with its action:

    NVSwitchFabricNotReady  critical  a GPU's fabric registration is not COMPLETED, failed,
                                      or reports unhealthy (labels host, gpu)
    PeerCopiesFailing       critical  links up and fabric COMPLETED, yet the GPU's newest
                                      copies fail with every peer (host, gpu; sweep); a
                                      pair failing between two GPUs whose other pairs work
                                      is PairCopiesFailing's (rules_pair_faults.py)
    FabricManagerDown       warning   Fabric Manager installed but not running on an
                                      NVSwitch host (host)
    GPUPeerCopiesSlow       warning   the GPU's copies slow with every peer while its peers
                                      are fast with each other (host, gpu): the GPU, not
                                      its pairs, is the fault

They read the kinds of contradiction stored with the GPU and host verdicts (never judging
again), and are part of `rules.RULES`. Their
PromQL twins read the kinds of contradiction stored with each verdict, which the server's
/metrics exports (`peerwatch_gpu_fabric_problem`, `peerwatch_host_fabric_problem`).
"""

from __future__ import annotations

from peerwatch.app.alerting.context import HostContext
from peerwatch.app.alerting.explains import (
    explained_gpus,
    host_below,
    pcie_short_gpus,
    throttled_gpus,
)
from peerwatch.app.alerting.promql import Twin
from peerwatch.app.alerting.rule import Finding, Rule, dashboard_path
from peerwatch.app.analysis.fabric_health import PEER_SLOW

REGISTRATION = ("registration", "status", "health")


def per_gpu(ctx: HostContext, kinds: tuple[str, ...], what: str) -> list[Finding]:
    """A finding per GPU whose stored verdict names one of `kinds` (the contradiction's
    words and action are in that verdict's reason): read, not judged again."""
    out = []
    for g in ctx.health.gpus:
        found = [k for k in g.fabric if k in kinds]
        if not found:
            continue
        out.append(Finding(
            labels={"host": ctx.name, "gpu": str(g.gpu)},
            summary=f"GPU{g.gpu} on {ctx.name}: {what}", description=g.reason,
            dashboard=dashboard_path(ctx.name, gpu=g.gpu), value=float(len(found))))
    return out


def fabric_not_ready(ctx: HostContext) -> list[Finding]:
    return per_gpu(ctx, REGISTRATION, "GPU fabric not ready")


def peer_copies_failing(ctx: HostContext) -> list[Finding]:
    return per_gpu(ctx, ("peer_copies",),
                    "peer copies fail with every peer, links up, fabric COMPLETED and P2P "
                    "supported")


def fabric_manager_down(ctx: HostContext) -> list[Finding]:
    if "fabric_manager" not in ctx.health.judgement.fabric:
        return []
    return [Finding(labels={"host": ctx.name},
                    summary=f"{ctx.name}: Fabric Manager is not running",
                    description=f"Fabric Manager is installed on {ctx.name} but not running "
                                "(start nvidia-fabricmanager); the host reads: "
                                f"{ctx.health.judgement.reason}",
                    dashboard=dashboard_path(ctx.name), value=0.0)]


def gpu_peer_copies_slow(ctx: HostContext) -> list[Finding]:
    """One alert per GPU the server finds slow with every peer while its peers are fast with
    each other (`analysis/attribution.py`): the GPU is the fault, its pairs page nothing.
    None where a more specific fault of the GPU explains it (links down or erring, PCIe
    trained short: their alert is the page; held below its clocks: GPUThrottled's), nor on
    a host below its fleet peers."""
    if host_below(ctx):
        return []
    skip = set(explained_gpus(ctx)) | pcie_short_gpus(ctx) | throttled_gpus(ctx)
    return [f for f in per_gpu(ctx, (PEER_SLOW,), "copies run slow with every peer")
            if int(f.labels["gpu"]) not in skip]


FABRIC_RULES: tuple[Rule, ...] = (
    Rule("NVSwitchFabricNotReady", "critical", 120.0, fabric_not_ready,
         "a GPU's fabric registration is not COMPLETED, failed, or unhealthy where the SKU has "
         "one (limited capacity, a COMPLETED fabric with less bandwidth, is not this rule's)",
         label_names="host, gpu",
         series=("peerwatch_gpu_fabric_problem",),
         twins=(
             Twin(
                 note=(
                     "The server's stored GPU verdict names a fabric registration contradiction "
                     "(not COMPLETED, an error status, unhealthy): what should exist on this "
                     "SKU is the server's judgement, so this reads the kinds it stored."
                 ),
                 expr=(
                     "max by (host, gpu) "
                     '(peerwatch_gpu_fabric_problem{kind=~"registration|status|health"}) == 1'
                 ),
                 for_="2m",
                 labels={"peer_gpu": "{{ $labels.gpu }}"},
                 annotations={
                     "summary": "GPU{{ $labels.gpu }} on {{ $labels.host }}: GPU fabric not ready",
                     "description": (
                         "The GPU fabric of GPU{{ $labels.gpu }} on {{ $labels.host }} is not "
                         "COMPLETED and healthy: P2P cannot be trusted; the host page says "
                         "which state and what to do."
                     ),
                     "dashboard": "/#/host/{{ $labels.host }}?gpu={{ $labels.gpu }}",
                 },
             ),
         )),
    Rule("PeerCopiesFailing", "critical", 0.0, peer_copies_failing,
         "links up, fabric COMPLETED and P2P supported, yet the GPU's newest peer copies fail: "
         "only where all three premises hold (P2P unsupported is `P2PAccessLost`'s page, a "
         "fabric not ready `NVSwitchFabricNotReady`'s, links short "
         "`NVLinkDown`/`NVLinkWidthReduced`'s); only for a GPU failing with every peer: the one "
         "page (its peers' pairs are explained by it); a pair failing between two GPUs whose "
         "other pairs work is `PairCopiesFailing`'s",
         label_names="host, gpu",
         series=("peerwatch_gpu_fabric_problem",),
         twins=(
             Twin(
                 note=(
                     "Links up and fabric COMPLETED, yet the GPU's newest copies fail with "
                     "every peer (a pair failing between two GPUs whose other pairs work: "
                     "PairCopiesFailing)."
                 ),
                 expr='max by (host, gpu) (peerwatch_gpu_fabric_problem{kind="peer_copies"}) == 1',
                 for_="0m",
                 labels={"peer_gpu": "{{ $labels.gpu }}"},
                 annotations={
                     "summary": (
                         "GPU{{ $labels.gpu }} on {{ $labels.host }}: peer copies fail with "
                         "every peer, links up and fabric COMPLETED"
                     ),
                     "description": (
                         "GPU{{ $labels.gpu }} on {{ $labels.host }} has its NVLinks up and its "
                         "fabric COMPLETED, yet its copies fail with every peer: drain it and "
                         "reset the GPU."
                     ),
                     "dashboard": "/#/host/{{ $labels.host }}?gpu={{ $labels.gpu }}",
                 },
             ),
         )),
    Rule("FabricManagerDown", "warning", 300.0, fabric_manager_down,
         "Fabric Manager installed but not running on an NVSwitch host",
         label_names="host",
         series=("peerwatch_host_fabric_problem",),
         twins=(
             Twin(
                 expr='max by (host) (peerwatch_host_fabric_problem{kind="fabric_manager"}) == 1',
                 for_="5m",
                 annotations={
                     "summary": "{{ $labels.host }}: Fabric Manager is not running",
                     "description": (
                         "Fabric Manager is installed on {{ $labels.host }} but not running: "
                         "the NVSwitch fabric keeps its state until a GPU reset, then cannot "
                         "register again. Start nvidia-fabricmanager."
                     ),
                     "dashboard": "/#/host/{{ $labels.host }}",
                 },
             ),
         )),
    Rule("GPUPeerCopiesSlow", "warning", 0.0, gpu_peer_copies_slow,
         "the server finds a GPU slow with every peer it was measured with while its peers are "
         "fast with each other: the GPU is the fault, one alert instead of one "
         "`P2PBandwidthDegraded` per pair; none where its links or PCIe link explain it or it is "
         "held below its clocks (`GPUThrottled` owns a throttled GPU's slowness, judged before "
         "the attribution), nor on a host below its fleet peers. PromQL: "
         '`peerwatch_gpu_fabric_problem{kind="peer_slow"} unless peerwatch_gpu_throttle`',
         label_names="host, gpu",
         series=(
             "peerwatch_gpu_fabric_problem", "peerwatch_gpu_throttle",
             "peerwatch_host_fleet_peer_ratio",
         ),
         twins=(
             Twin(
                 note=(
                     "The server attributes slow pairs to a GPU slow with every peer (its peers "
                     "fast with each other): one page for the GPU, none per pair; none on a "
                     "host below its fleet peers as a whole (HostBelowFleetPeers is that page), "
                     "none on a GPU held below its clocks most of the time (GPUThrottled owns "
                     "its slowness, as on the server)."
                 ),
                 expr=(
                     'max by (host, gpu) (peerwatch_gpu_fabric_problem{kind="peer_slow"}) == 1 '
                     "unless on (host) (max by (host) (peerwatch_host_fleet_peer_ratio) < 0.93) "
                     "unless on (host, gpu) (max by (host, gpu) (peerwatch_gpu_throttle) == 1)\n"
                 ),
                 for_="0m",
                 labels={"peer_gpu": "{{ $labels.gpu }}"},
                 annotations={
                     "summary": (
                         "GPU{{ $labels.gpu }} on {{ $labels.host }}: copies run slow with "
                         "every peer"
                     ),
                     "description": (
                         "GPU{{ $labels.gpu }} on {{ $labels.host }} is slow with every peer "
                         "while its peers are fast with each other: the GPU is the fault; the "
                         "host page says which tests and by how much."
                     ),
                     "dashboard": "/#/host/{{ $labels.host }}?gpu={{ $labels.gpu }}",
                 },
             ),
         )),
)
