"""The alerts for what the GPU driver itself says (app/analysis/gpu_health.py):

    GPURecoveryActionRequired  critical  NVML's recovery action for the GPU is not none
                                         (DRAIN_P2P, GPU reset, reboot ...; Xid 154)
    GPUMemoryFailed            critical  a row remap failed, or uncorrected ECC errors since
                                         the driver loaded: replace the GPU
    GPURowRemapPending         warning   a row remap waits for a GPU reset
    GPUPcieAerRising           warning   the GPU's (or its bridge's) PCIe AER counters rise

Labels host, gpu, kind. Each reads the driver findings stored with the GPU's verdict (never
judging again); the PromQL twins read what /metrics exports of them
(`peerwatch_gpu_driver_problem{kind, verdict}`).
"""

from __future__ import annotations

from collections.abc import Callable

from peerwatch.app.alerting.context import HostContext
from peerwatch.app.alerting.promql import Twin
from peerwatch.app.alerting.rule import Finding, Rule, dashboard_path

SERIES = "peerwatch_gpu_driver_problem"


def _check(kinds: tuple[str, ...]) -> Callable[[HostContext], list[Finding]]:
    def check(ctx: HostContext) -> list[Finding]:
        reasons = {g.gpu: g.reason for g in ctx.health.gpus}
        out = []
        for gpu, facts in sorted(ctx.health.gpu_facts.items()):
            for f in (facts.get("driver") or {}).get("findings", ()):
                if f["kind"] not in kinds:
                    continue
                out.append(Finding(
                    labels={"host": ctx.name, "gpu": str(gpu), "kind": f["kind"]},
                    summary=f"GPU{gpu} on {ctx.name}: {f['words']}",
                    description=reasons.get(gpu, f"GPU{gpu} {f['words']}: {f['action']}"),
                    dashboard=dashboard_path(ctx.name, gpu=gpu), value=1.0))
        return out
    return check


def _rule(name: str, severity: str, kinds: tuple[str, ...], doc: str, summary: str,
          description: str) -> Rule:
    selector = "|".join(kinds)
    return Rule(
        name, severity, 0.0, _check(kinds), f"{doc}. PromQL: `{SERIES}{{kind}}`",
        label_names="host, gpu, kind", series=(SERIES,),
        twins=(Twin(
            note=("The server's stored GPU verdict: the driver's own reads (recovery action, "
                  "ECC, row remapping, PCIe AER rates; app/analysis/gpu_health.py)."),
            expr=f'max by (host, gpu, kind) ({SERIES}{{kind=~"{selector}"}}) == 1',
            for_="0m",
            labels={"peer_gpu": "{{ $labels.gpu }}"},
            annotations={
                "summary": f"GPU{{{{ $labels.gpu }}}} on {{{{ $labels.host }}}} {summary}",
                "description": description,
                "dashboard": "/#/host/{{ $labels.host }}?gpu={{ $labels.gpu }}",
            }),))


DRIVER_RULES: tuple[Rule, ...] = (
    _rule("GPURecoveryActionRequired", "critical", ("recovery_action",),
          "NVML's recovery action for the GPU is not none (`drain_p2p`: its peer-to-peer "
          "fabric must not be used, its pairs are left out of the scheduler answer; "
          "`gpu_reset`, `node_reboot`, `drain_and_reset`, `recover_imex_domain`, "
          "`bus_reset`, `system_reboot`); the GPU is down with the driver's words "
          "([gpu-evidence.md](gpu-evidence.md))",
          "needs the driver's recovery action",
          "The driver of {{ $labels.host }} asks for a recovery action on GPU{{ $labels.gpu }} "
          "(nvidia-smi -q: GPU Recovery Action; Xid 154). The host page says which and "
          "what to do."),
    _rule("GPUMemoryFailed", "critical", ("row_remap_failure", "ecc_uncorrected"),
          "a row remap failed (no spare row left) or the GPU counted uncorrected ECC errors "
          "since the driver loaded: down, replace the GPU",
          "has failed memory",
          "GPU{{ $labels.gpu }} of {{ $labels.host }} has a failed row remap or uncorrected "
          "ECC errors: replace the GPU."),
    _rule("GPURowRemapPending", "warning", ("row_remap_pending",),
          "a row remap waits for the GPU's next reset: degraded, reset the GPU when idle",
          "has a row remap pending",
          "GPU{{ $labels.gpu }} of {{ $labels.host }} remapped a memory row that takes "
          "effect at its next reset: reset the GPU when idle."),
    _rule("GPUPcieAerRising", "warning", ("aer",),
          "the PCIe AER counters of the GPU and its upstream bridge rise (fatal or non-fatal "
          "at all, correctable above 0.01/s over the link-rate window)",
          "logs rising PCIe AER errors",
          "The PCIe AER counters of GPU{{ $labels.gpu }} of {{ $labels.host }} or its bridge "
          "are rising: check its seating, riser or cable and slot."),
)
