"""The all-to-all rule of a GPU: what it sends with every GPU sending to every other at once.

    AllToAllDegraded  warning  a GPU's all-to-all (a2a_ce, a2a_nccl: the MoE token-routing
                               pattern) judged degraded against what its topology offers,
                               its baseline or its fleet peers

An all-to-all that fails or hangs (a dead GPU hangs it on every GPU: NVIDIA/nccl#1531) is
judged down on every GPU and paged by ProbeFailing, which names each failed test: not here.
"""

from __future__ import annotations

from peerwatch.app.alerting.context import HostContext
from peerwatch.app.alerting.explains import explained_gpus, pcie_short_gpus
from peerwatch.app.alerting.promql import Twin
from peerwatch.app.alerting.rule import Finding, Rule, dashboard_path
from peerwatch.app.analysis.health import TestJudgement
from peerwatch.app.analysis.verdict import Verdict
from peerwatch.probes.test_kinds import kind_of


def is_all_to_all(test: str) -> bool:
    return kind_of(test).expect.model == "all_to_all"


def explained(ctx: HostContext) -> tuple[bool, set[int]]:
    """(is every GPU's all-to-all explained by another page, the GPUs whose is): a GPU's
    own fault (NVLinks down, P2P lost, missing, an Xid) or a PCIe link trained short slows
    every GPU's flows to it, so it explains the host's; a pair judged slow or failing
    explains its two GPUs'. Those pages say where the fault is: one fault, one page."""
    if explained_gpus(ctx) or pcie_short_gpus(ctx):
        return True, set()
    gpus: set[int] = set()
    for (src, dst, _test), j in ctx.health.tests.items():
        if src != dst and j.verdict in (Verdict.DEGRADED, Verdict.DOWN):
            gpus |= {src, dst}
    return False, gpus


def all_to_all_degraded(ctx: HostContext) -> list[Finding]:
    """One alert per GPU whose all-to-all is judged degraded (sustained or intermittent),
    unless another page explains it (`explained`)."""
    whole_host, gpus = explained(ctx)
    if whole_host:
        return []
    slow: dict[int, list[TestJudgement]] = {}
    for (src, dst, test), j in sorted(ctx.health.tests.items(),
                                      key=lambda kv: (kv[0][0], kv[0][2])):
        if src != dst or not is_all_to_all(test) or src in gpus:
            continue
        if j.verdict is Verdict.DEGRADED and j.low_since is not None:
            slow.setdefault(src, []).append(j)
    out = []
    for gpu, tests in sorted(slow.items()):
        ratios = [r for j in tests for r in (j.ratio_expected, j.ratio_baseline) if r is not None]
        out.append(Finding(
            labels={"host": ctx.name, "gpu": str(gpu)},
            summary=f"GPU{gpu} on {ctx.name}: all-to-all is slow "
                    f"({', '.join(j.test.value for j in tests)})",
            description=" ".join(j.reason + "." for j in tests)
            + " Every GPU sends to every other at once here (MoE token routing): a slow or "
              "dead link or GPU on any of its paths holds the whole step back.",
            dashboard=dashboard_path(ctx.name, gpu=gpu),
            value=min(ratios) if ratios else None))
    return out


ALL_TO_ALL_RULES: tuple[Rule, ...] = (
    Rule("AllToAllDegraded", "warning", 0.0, all_to_all_degraded,
         "the server judges a GPU's all-to-all (`a2a_ce`, `a2a_nccl`) *degraded*: below 0.7 "
         "of what its topology offers every GPU sending to every other at once "
         "(app/analysis/all_to_all.py), 0.8 of its baseline or its fleet peers, sustained as "
         "for pairs; one alert per GPU (a failed or hung all-to-all, which a dead GPU fails on "
         "every GPU within the watchdog's limit, is ProbeFailing's page); none where another "
         "page explains "
         "it (a GPU's NVLinks down, P2P lost, an Xid, a PCIe link trained short, a pair of "
         "the GPU's judged slow: one fault, one page); `for` 0: the sustain time is the "
         "wait",
         label_names="host, gpu",
         series=(
             "peerwatch_gpu_copy_bandwidth_bytes_per_second",
             "peerwatch_gpu_all_to_all_expected_bytes_per_second",
             "peerwatch_probe_last_sweep_timestamp_seconds",
             # what explains it (peerwatch:gpu_fault_explains_pairs, gpu_pcie_downtrained)
             "peerwatch_fabric_event_findings", "peerwatch_gpu_nvlink_active_links",
             "peerwatch_gpu_nvlink_links", "peerwatch_gpu_present",
             "peerwatch_nvlink_crc_flit_errors_total", "peerwatch_nvlink_recovery_errors_total",
             "peerwatch_nvlink_replay_errors_total", "peerwatch_nvlink_up",
             "peerwatch_pcie_link_generation", "peerwatch_pcie_link_max_generation",
             "peerwatch_pcie_link_max_width_lanes", "peerwatch_pcie_link_width_lanes",
         ),
         twins=(
             Twin(
                 note=(
                     "A GPU's all-to-all figure below 0.70 (PEERWATCH_DEGRADED_RATIO_EXPECTED) "
                     "of what its topology offers, the server's own expectation as its "
                     "/metrics exports it, in each of the last two sweeps (counted in the "
                     "recording rule above, as for PCIeBandwidthDegraded: no `for`, the page "
                     "comes at the second low sweep); one alert per GPU, its lowest ratio; "
                     "none on a host where a GPU's own fault or a PCIe link trained short "
                     "explains it (`unless on (host)`, as the server's `explained`). "
                     "The server also judges each figure against its baseline and fleet "
                     "peers, and leaves out a GPU a slow pair of its explains (that pair's "
                     "page says where the fault is); the agents export measurements only."
                 ),
                 expr=(
                     "min by (host, gpu) (peerwatch:gpu_all_to_all_low_two_sweeps)\n"
                     "unless on (host) (\n"
                     "    peerwatch:gpu_fault_explains_pairs or peerwatch:gpu_pcie_downtrained\n"
                     ")\n"
                 ),
                 for_="0m",
                 labels={"peer_gpu": "{{ $labels.gpu }}"},
                 annotations={
                     "summary": "GPU{{ $labels.gpu }} on {{ $labels.host }}: all-to-all is slow",
                     "description": (
                         "GPU{{ $labels.gpu }} on {{ $labels.host }} sends in an all-to-all "
                         'at {{ $value | printf "%.2f" }} of what its topology offers, in two '
                         "sweeps in a row: a slow link or GPU on its paths holds every "
                         "all-to-all step back."
                     ),
                     "dashboard": "/#/host/{{ $labels.host }}?gpu={{ $labels.gpu }}",
                 },
             ),
         )),
)
