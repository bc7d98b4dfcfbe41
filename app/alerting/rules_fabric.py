"""Alert rules for the fabric contradictions of `app/analysis/fabric_state.py`, one alertname
per kind of trouble so that each pages once with its action:

    NVSwitchFabricNotReady  critical  a GPU's fabric registration is not COMPLETED, failed,
                                      or reports unhealthy (labels host, gpu)
    PeerCopiesFailing       critical  links up and fabric COMPLETED, yet the newest peer
                                      copies of the GPU's pairs fail (host, gpu; sweep)
    FabricManagerDown       warning   Fabric Manager installed but not running on an
                                      NVSwitch host (host)

They read the same judge the GPU and host verdicts use, and are part of `rules.RULES`. Their
PromQL twins read the kinds of contradiction stored with each verdict, which the server's
/metrics exports (`peerwatch_gpu_fabric_problem`, `peerwatch_host_fabric_problem`).
"""

from __future__ import annotations

from app.alerting.context import HostContext
from app.alerting.rule import Finding, Rule, dashboard_path
from app.analysis.fabric_state import (
    GpuFabricVerdict,
    fabric_manager_finding,
    judge_gpu_fabric,
)
from app.queries.page_holds import fabric_manager_of

REGISTRATION = ("registration", "status", "health")


def _gpu_verdicts(ctx: HostContext, with_pairs: bool) -> list[GpuFabricVerdict]:
    pairs = ctx.health.judgement.pairs if with_pairs else ()
    return [judge_gpu_fabric(g, info, ctx.fabric.links_of(g), pairs)
            for g, info in sorted(ctx.fabric.gpus.items())]


def _per_gpu(ctx: HostContext, kinds: tuple[str, ...], with_pairs: bool) -> list[Finding]:
    out = []
    for v in _gpu_verdicts(ctx, with_pairs):
        found = [f for f in v.findings if f.kind in kinds]
        if not found:
            continue
        out.append(Finding(
            labels={"host": ctx.name, "gpu": str(v.gpu)},
            summary=f"GPU{v.gpu} on {ctx.name}: {found[0].what}",
            description="; ".join(f.text for f in found),
            dashboard=dashboard_path(ctx.name, gpu=v.gpu), value=float(len(found))))
    return out


def fabric_not_ready(ctx: HostContext) -> list[Finding]:
    return _per_gpu(ctx, REGISTRATION, with_pairs=False)


def peer_copies_failing(ctx: HostContext) -> list[Finding]:
    return _per_gpu(ctx, ("peer_copies",), with_pairs=True)


def fabric_manager_down(ctx: HostContext) -> list[Finding]:
    expectations = [v.expectation for v in _gpu_verdicts(ctx, with_pairs=False)]
    finding = fabric_manager_finding(expectations, fabric_manager_of(ctx.session, ctx.host))
    if finding is None:
        return []
    return [Finding(labels={"host": ctx.name}, summary=f"{ctx.name}: {finding.what}",
                    description=finding.text, dashboard=dashboard_path(ctx.name), value=0.0)]


FABRIC_RULES: tuple[Rule, ...] = (
    Rule("NVSwitchFabricNotReady", "critical", 120.0, fabric_not_ready,
         "GPU fabric registration not COMPLETED, failed, or unhealthy: P2P cannot be trusted."),
    Rule("PeerCopiesFailing", "critical", 0.0, peer_copies_failing,
         "Links up and fabric COMPLETED, yet peer copies fail."),
    Rule("FabricManagerDown", "warning", 300.0, fabric_manager_down,
         "Fabric Manager installed but not running on an NVSwitch host."),
)
