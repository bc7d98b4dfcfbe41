"""The GPUDirect RDMA rule of a GPU: its memory through its nearest RDMA NIC and back.

    GPUDirectRDMADegraded  warning  a GPU's gdr_loopback (opt-in) judged degraded against its
                                    NIC's line rate x 0.85, its baseline or its fleet peers;
                                    none where the NIC's port is down or flapping or the GPU's
                                    PCIe link trained short (those pages say where the fault is)

PCIeBandwidthDegraded leaves the NIC tests out: a slow GPUDirect path is a fault of the
GPU <-> NIC path (SYS across sockets, ACS, the peer-memory module), not of the GPU's copies.
"""

from __future__ import annotations

from peerwatch.app.alerting.context import HostContext
from peerwatch.app.alerting.promql import Twin
from peerwatch.app.alerting.rule import Finding, Rule, dashboard_path
from peerwatch.app.alerting.rules_pcie import pcie_link_downtrained
from peerwatch.app.analysis.health import TestJudgement
from peerwatch.app.analysis.verdict import Verdict
from peerwatch.probes.report import NIC_TESTS

EXPLAINING_NIC_KINDS = ("down", "flap")  # NICPortDown, NICPortFlapping: their page, not this
CHECK = ("Check the GPU's PCIe path to the NIC (SYS: across the sockets; ACS redirecting "
         "peer writes through the root complex), that nvidia_peermem is loaded or dma-buf is "
         "offered, and the NIC's link rate.")


def nic_of(ctx: HostContext, gpu: int) -> str | None:
    """The GPU's nearest RDMA NIC as its inventory names it (None: not named)."""
    info = ctx.fabric.gpus.get(gpu)
    return info.rdma.nearest_nic if info is not None else None


def explained_nics(ctx: HostContext) -> set[str]:
    """The NICs with a port down or flapping: NICPortDown / NICPortFlapping page them."""
    return {port["nic"] for port in ctx.health.nics
            if any(f["kind"] in EXPLAINING_NIC_KINDS for f in port.get("findings", ()))}


def gpudirect_rdma_degraded(ctx: HostContext) -> list[Finding]:
    """One alert per GPU whose gdr_loopback is judged degraded (sustained or intermittent),
    unless its NIC's port is down or flapping or its PCIe link trained short."""
    bad_nics = explained_nics(ctx)
    short = {int(f.labels["gpu"]) for f in pcie_link_downtrained(ctx)}
    slow: dict[int, list[TestJudgement]] = {}
    for (src, dst, test), j in sorted(ctx.health.tests.items(),
                                      key=lambda kv: (kv[0][0], kv[0][2])):
        if (src != dst or test not in NIC_TESTS or j.verdict is not Verdict.DEGRADED
                or j.low_since is None or src in short or nic_of(ctx, src) in bad_nics):
            continue
        slow.setdefault(src, []).append(j)
    out = []
    for gpu, tests in sorted(slow.items()):
        nic = nic_of(ctx, gpu)
        ratios = [r for j in tests for r in (j.ratio_expected, j.ratio_baseline) if r is not None]
        out.append(Finding(
            labels={"host": ctx.name, "gpu": str(gpu), **({"nic": nic} if nic else {})},
            summary=f"GPU{gpu} on {ctx.name}: GPUDirect RDMA"
                    f"{f' through {nic}' if nic else ''} is slow",
            description=" ".join(j.reason + "." for j in tests) + " " + CHECK,
            dashboard=dashboard_path(ctx.name, gpu=gpu),
            value=min(ratios) if ratios else None))
    return out


GDR_RULES: tuple[Rule, ...] = (
    Rule("GPUDirectRDMADegraded", "warning", 0.0, gpudirect_rdma_degraded,
         "the server judges a GPU's `gdr_loopback` (opt-in: its memory through its nearest "
         "RDMA NIC and back) *degraded*: below 0.7 of the NIC's line rate x 0.85 (or of its "
         "PCIe link where that is slower), 0.8 of its baseline or its fleet peers, sustained "
         "as for pairs; one alert per GPU; none where the NIC's port is down or flapping "
         "(`NICPortDown`, `NICPortFlapping`) or the GPU's PCIe link trained short "
         "(`PCIeLinkDowntrained`): one fault, one page; `for` 0: the sustain time is the wait",
         label_names="host, gpu, nic (where the inventory names the GPU's nearest NIC)",
         series=(
             "peerwatch_gpu_copy_bandwidth_bytes_per_second",
             "peerwatch_gpu_gdr_expected_bytes_per_second",
             "peerwatch_nic_port_problem", "peerwatch_probe_last_sweep_timestamp_seconds",
             "peerwatch_pcie_link_generation", "peerwatch_pcie_link_max_generation",
             "peerwatch_pcie_link_max_width_lanes", "peerwatch_pcie_link_width_lanes",
         ),
         twins=(
             Twin(
                 note=(
                     "A GPU's gdr_loopback below 0.70 (PEERWATCH_DEGRADED_RATIO_EXPECTED) of "
                     "what its NIC offers, the server's own expectation as its /metrics "
                     "exports it (with the NIC's name), in each of the last two sweeps "
                     "(counted in the recording rule above, as for PCIeBandwidthDegraded: no "
                     "`for`, the page comes at the second low sweep); none while the NIC's "
                     "port is down or flapping or the GPU's PCIe link trains short (their "
                     "pages). The server also judges the figure against its baseline and "
                     "fleet peers; the agents export measurements only."
                 ),
                 expr=(
                     "min by (host, gpu, nic) (peerwatch:gpu_gdr_low_two_sweeps)\n"
                     "unless on (host, nic)\n"
                     '  (max by (host, nic) (peerwatch_nic_port_problem{kind=~"down|flap"}) '
                     "== 1)\n"
                     "unless on (host, gpu) peerwatch:gpu_pcie_downtrained\n"
                 ),
                 for_="0m",
                 labels={"peer_gpu": "{{ $labels.gpu }}"},
                 annotations={
                     "summary": (
                         "GPU{{ $labels.gpu }} on {{ $labels.host }}: GPUDirect RDMA through "
                         "{{ $labels.nic }} is slow"
                     ),
                     "description": (
                         "GPU{{ $labels.gpu }} on {{ $labels.host }} moves its memory through "
                         '{{ $labels.nic }} at {{ $value | printf "%.2f" }} of what the NIC '
                         "offers, in two sweeps in a row. " + CHECK
                     ),
                     "dashboard": "/#/host/{{ $labels.host }}?gpu={{ $labels.gpu }}",
                 },
             ),
         )),
)
