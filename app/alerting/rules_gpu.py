"""The alert for a GPU held below its clocks most of the time (app/analysis/throttle.py):

    GPUThrottled  warning  power cap, thermal or HW slowdown in most of the GPU's newest
                           sweeps (labels host, gpu)

One page for the GPU: its slow pairs are explained by it and judged `unknown` for the fabric,
so no P2PBandwidthDegraded pages beside it. It reads the throttle facts stored with the GPU's
verdict (never judging again); its PromQL twin reads what the server's /metrics exports of
them (`peerwatch_gpu_throttle{kind}`).
"""

from __future__ import annotations

from peerwatch.app.alerting.context import HostContext
from peerwatch.app.alerting.promql import Twin
from peerwatch.app.alerting.rule import Finding, Rule, dashboard_path
from peerwatch.probes.clocks import KIND_WORDS


def gpu_throttled(ctx: HostContext) -> list[Finding]:
    reasons = {g.gpu: g.reason for g in ctx.health.gpus}
    out = []
    for gpu, facts in sorted(ctx.health.gpu_facts.items()):
        held = facts.get("throttle")
        if not held:
            continue
        words = " and ".join(KIND_WORDS.get(k, k) for k in held["kinds"])
        out.append(Finding(
            labels={"host": ctx.name, "gpu": str(gpu)},
            summary=f"GPU{gpu} on {ctx.name} is {words}",
            description=reasons.get(gpu, f"GPU{gpu} {words}"),
            dashboard=dashboard_path(ctx.name, gpu=gpu), value=float(held["held"])))
    return out


GPU_RULES: tuple[Rule, ...] = (
    Rule("GPUThrottled", "warning", 0.0, gpu_throttled,
         "a GPU's clocks were held for power, heat or a HW slowdown (NVML clocks-event reasons "
         "`sw_power_cap`, `hw_power_brake_slowdown`, `sw_thermal_slowdown`, "
         "`hw_thermal_slowdown`, `hw_slowdown`, or a violation counter rising during the sweep; "
         "never idle, application clocks or sync boost) in `PEERWATCH_THROTTLE_SWEEPS_MOST` (4) "
         'of its newest `PEERWATCH_THROTTLE_SWEEPS_OF` (6) sweeps; its slow pairs read "slow, '
         'GPU3 power-capped during the test" and are not paged '
         "([gpu-evidence.md](gpu-evidence.md)). PromQL: `peerwatch_gpu_throttle{kind}`",
         label_names="host, gpu",
         series=("peerwatch_gpu_throttle",),
         twins=(
             Twin(
                 note=(
                     "The server's stored GPU verdict: clocks held for power, heat or a HW "
                     "slowdown in most of the GPU's newest sweeps (app/analysis/throttle.py). "
                     "Its slow pairs are explained by it (judged unknown for the fabric), and "
                     "`peer_gpu` lets Alertmanager mute any pair alert at either end."
                 ),
                 expr="max by (host, gpu) (peerwatch_gpu_throttle) == 1",
                 for_="0m",
                 labels={"peer_gpu": "{{ $labels.gpu }}"},
                 annotations={
                     "summary": (
                         "GPU{{ $labels.gpu }} on {{ $labels.host }} is held below its clocks"
                     ),
                     "description": (
                         "GPU{{ $labels.gpu }} of {{ $labels.host }} ran power-capped, "
                         "thermally throttled or in HW slowdown in most of its newest sweeps: "
                         "its transfers are slower for it, not the fabric. The host page says "
                         "which and what to check."
                     ),
                     "dashboard": "/#/host/{{ $labels.host }}?gpu={{ $labels.gpu }}",
                 },
             ),
         )),
)
