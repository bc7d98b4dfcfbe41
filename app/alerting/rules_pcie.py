"""The PCIe rules of a GPU: its link trained short, its own copies slow.

    PCIeLinkDowntrained    warning  PCIe width (and generation, unless turned off) below
                                    its maximum (labels host, gpu, field)
    PCIeBandwidthDegraded  warning  the GPU's own copies (h2d, d2h, local) judged slow; none
                                    where PCIeLinkDowntrained explains it (one fault, one page)
"""

from __future__ import annotations

from peerwatch.app.alerting.context import HostContext
from peerwatch.app.alerting.promql import Twin
from peerwatch.app.alerting.rule import Finding, Rule, dashboard_path
from peerwatch.app.analysis.health import TestJudgement
from peerwatch.app.analysis.verdict import Verdict
from peerwatch.probes.report import NIC_TESTS, PCIE_TESTS, test_scope
from peerwatch.probes.test_kinds import kind_of


def pcie_link_downtrained(ctx: HostContext) -> list[Finding]:
    out = []
    for gpu, info in sorted(ctx.fabric.gpus.items()):
        p = info.pcie
        short: list[tuple[str, str, int]] = []
        if p.width_current and p.width_max and p.width_current < p.width_max:
            short.append(("width", f"x{p.width_current} of x{p.width_max}", p.width_current))
        if (ctx.settings.pcie_check_generation and p.gen_current and p.gen_max
                and p.gen_current < p.gen_max):
            short.append(("generation", f"Gen{p.gen_current} of Gen{p.gen_max}", p.gen_current))
        for field_name, text, now_at in short:
            out.append(Finding(
                labels={"host": ctx.name, "gpu": str(gpu), "field": field_name},
                summary=f"PCIe link of GPU{gpu} on {ctx.name} runs below its maximum",
                description=f"The PCIe link of GPU{gpu} on {ctx.name} trained at {text}: "
                            "host transfers and PCIe peer traffic are slower.",
                dashboard=dashboard_path(ctx.name, gpu=gpu),
                value=float(now_at)))
    return out


def pcie_bandwidth_degraded(ctx: HostContext) -> list[Finding]:
    """One alert per GPU whose own copies are judged slow (sustained or intermittent): host
    <-> GPU (h2d, d2h) below what its PCIe link offers or its baseline, or its local copy
    below its baseline. None where PCIeLinkDowntrained already pages for that GPU: the
    trained link explains the slow copies (one fault, one page)."""
    explained = {int(f.labels["gpu"]) for f in pcie_link_downtrained(ctx)}
    slow: dict[int, list[TestJudgement]] = {}
    for (src, dst, test), j in sorted(ctx.health.tests.items(),
                                      key=lambda kv: (kv[0][0], kv[0][2])):
        if (src != dst or test_scope(test) != "gpu" or kind_of(test).joint
                or j.verdict is not Verdict.DEGRADED
                or j.low_since is None or src in explained or test in NIC_TESTS):
            continue
        slow.setdefault(src, []).append(j)
    out = []
    for gpu, tests in sorted(slow.items()):
        ratios = [r for j in tests for r in (j.ratio_expected, j.ratio_baseline) if r is not None]
        pcie = any(j.test in PCIE_TESTS for j in tests)
        what = "host <-> GPU copies are" if pcie else "its local copies are"
        out.append(Finding(
            labels={"host": ctx.name, "gpu": str(gpu)},
            summary=f"GPU{gpu} on {ctx.name}: {what} slow "
                    f"({', '.join(j.test.value for j in tests)})",
            description=" ".join(j.reason + "." for j in tests)
            + (" The PCIe link trains at full width and generation: suspect the slot, riser, "
               "retimer or the host side (IOMMU, NUMA placement)." if pcie else ""),
            dashboard=dashboard_path(ctx.name, gpu=gpu), value=min(ratios) if ratios else None))
    return out


PCIE_RULES: tuple[Rule, ...] = (
    Rule("PCIeLinkDowntrained", "warning", 900.0, pcie_link_downtrained,
         "a GPU's PCIe width (and generation, unless `PEERWATCH_PCIE_CHECK_GENERATION=false`) is "
         "below its maximum; the GPU's verdict says the same",
         label_names="host, gpu, field (`width` | `generation`)",
         series=(
             "peerwatch_pcie_link_generation", "peerwatch_pcie_link_max_generation",
             "peerwatch_pcie_link_max_width_lanes", "peerwatch_pcie_link_width_lanes",
         ),
         twins=(
             Twin(
                 note="`field` says which fell short: the width (lanes) or the generation.",
                 expr=(
                     "label_replace(peerwatch_pcie_link_width_lanes < "
                     "peerwatch_pcie_link_max_width_lanes,\n"
                     '              "field", "width", "", "")\n'
                     "or\n"
                     "label_replace(peerwatch_pcie_link_generation < "
                     "peerwatch_pcie_link_max_generation,\n"
                     '              "field", "generation", "", "")\n'
                 ),
                 for_="15m",
                 labels={"peer_gpu": "{{ $labels.gpu }}"},
                 annotations={
                     "summary": (
                         "PCIe link of GPU{{ $labels.gpu }} on {{ $labels.host }} runs below "
                         "its maximum"
                     ),
                     "description": (
                         "The PCIe link of GPU{{ $labels.gpu }} on {{ $labels.host }} runs at "
                         "{{ $labels.field }} {{ $value }}, below its maximum."
                     ),
                     "dashboard": "/#/host/{{ $labels.host }}?gpu={{ $labels.gpu }}",
                 },
             ),
         )),
    Rule("PCIeBandwidthDegraded", "warning", 0.0, pcie_bandwidth_degraded,
         "the server judges a GPU's own copies *degraded*: h2d/d2h below 0.7 of what its PCIe "
         "slot offers (max generation x max width x 0.88) or 0.8 of its baseline, or its local "
         "copy below its baseline, sustained as for pairs; one alert per GPU, its slow tests "
         "listed; none where `PCIeLinkDowntrained` explains it (the case only a measurement "
         "shows: a link that trains fully yet carries less); `for` 0: the sustain time is the wait",
         label_names="host, gpu",
         series=(
             "peerwatch_gpu_copy_bandwidth_bytes_per_second", "peerwatch_pcie_link_generation",
             "peerwatch_pcie_link_max_generation", "peerwatch_pcie_link_max_width_lanes",
             "peerwatch_pcie_link_width_lanes", "peerwatch_probe_last_sweep_timestamp_seconds",
         ),
         twins=(
             Twin(
                 note=(
                     "A GPU's host <-> GPU copies (h2d, d2h) below 0.70 "
                     "(PEERWATCH_DEGRADED_RATIO_EXPECTED) of what its PCIe slot offers, in each "
                     "of the last two sweeps (PEERWATCH_DEGRADED_SUSTAIN_S, 600 s: two sweeps; "
                     "counted in the recording rule above, as for the pair rules, so no `for` "
                     "and the page comes at the second low sweep, the server's minute, whatever "
                     "the agent's jitter). None while the link trains below its maximum: "
                     "PCIeLinkDowntrained pages for that (both recording rules leave it out). "
                     "The server also judges local copies and each GPU's own baseline; the "
                     "agents export measurements only."
                 ),
                 expr="min by (host, gpu) (peerwatch:gpu_copy_test_low_two_sweeps)",
                 for_="0m",
                 labels={"peer_gpu": "{{ $labels.gpu }}"},
                 annotations={
                     "summary": (
                         "GPU{{ $labels.gpu }} on {{ $labels.host }}: host <-> GPU copies are "
                         "slow"
                     ),
                     "description": (
                         "GPU{{ $labels.gpu }} on {{ $labels.host }} copies to or from host "
                         'memory at {{ $value | printf "%.2f" }} of what its PCIe link offers, '
                         "in two sweeps in a row, though the link trains at its maximum: "
                         "suspect the slot, riser, retimer or the host side (IOMMU, NUMA "
                         "placement)."
                     ),
                     "dashboard": "/#/host/{{ $labels.host }}?gpu={{ $labels.gpu }}",
                 },
             ),
             Twin(
                 note=(
                     "The intermittent pattern (3 of the newest 6 sweeps low, the recording "
                     "rule above), one alert per GPU, as the server's verdict; `pattern: "
                     "intermittent` keeps it apart from the sustained rule above, which owns "
                     "the GPU once it fires."
                 ),
                 expr=(
                     "max by (host, gpu) (peerwatch:gpu_copy_test_low_intermittent)\n"
                     "unless on (host, gpu)\n"
                     '  ALERTS{alertname="PCIeBandwidthDegraded", alertstate="firing", '
                     'pattern=""}\n'
                 ),
                 for_="0m",
                 labels={"pattern": "intermittent", "peer_gpu": "{{ $labels.gpu }}"},
                 annotations={
                     "summary": (
                         "GPU{{ $labels.gpu }} on {{ $labels.host }}: host <-> GPU copies are "
                         "intermittently slow"
                     ),
                     "description": (
                         "GPU{{ $labels.gpu }} on {{ $labels.host }} copied to or from host "
                         "memory below 0.70 of what its PCIe link offers in {{ $value }} of its "
                         "last 6 sweeps, though the link trains at its maximum, a fault that "
                         "comes and goes: suspect the slot, riser, retimer or the host side "
                         "(IOMMU, NUMA placement)."
                     ),
                     "dashboard": "/#/host/{{ $labels.host }}?gpu={{ $labels.gpu }}",
                 },
             ),
         )),
)
