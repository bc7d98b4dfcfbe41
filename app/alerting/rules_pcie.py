"""The PCIe rules of a GPU: its link trained short, its own copies slow.

    PCIeLinkDowntrained    warning  PCIe width (and generation, unless turned off) below
                                    its maximum (labels host, gpu, field)
    PCIeBandwidthDegraded  warning  the GPU's own copies (h2d, d2h, local) judged slow; none
                                    where PCIeLinkDowntrained explains it (one fault, one page)
"""

from __future__ import annotations

from peerwatch.app.alerting.context import HostContext
from peerwatch.app.alerting.rule import Finding, Rule, dashboard_path
from peerwatch.app.analysis.health import TestJudgement
from peerwatch.app.analysis.verdict import Verdict
from peerwatch.probes.report import GPU_TESTS, PCIE_TESTS


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
        if (src != dst or test not in GPU_TESTS or j.verdict is not Verdict.DEGRADED
                or j.low_since is None or src in explained):
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
         "PCIe width (and generation, unless turned off) below the maximum."),
    Rule("PCIeBandwidthDegraded", "warning", 0.0, pcie_bandwidth_degraded,
         "The server's verdict 'degraded' for a GPU's own copies (h2d, d2h against its PCIe "
         "link and baseline; local against its baseline), one per GPU; none where "
         "PCIeLinkDowntrained explains it."),
)
