"""The pages of slow pairs: one alert per unordered pair, never one per direction.

    P2PBandwidthDegraded  warning  the pair's tests judged degraded for low bandwidth, in
                                   one direction or both (labels host, gpu = a, peer_gpu = b)
    P2PBelowFleetPeers    warning  the pair far below the same pair on its fleet peers

A pair slow both ways is one fault (a cable, a switch port, the path between two GPUs), so
it pages once, as PairCopiesFailing does: `gpu` < `peer_gpu`, and the text says
which directions are low and by how much ("GPU2<->GPU5 on h: GPU2->GPU5 ce_write 0.61;
GPU5->GPU2 ce_read 0.64", or "(one direction only)"). Each direction is first judged on its
own, with every clause that leaves it out (a fault of either GPU, a downtrained PCIe link on
the way, the pair attributed to a GPU, its page held while a GPU pattern forms); the pair
pages if a direction is left. The PromQL twins aggregate the agent's ordered series the
same way (`peerwatch_p2p_pair_info`; the pair-labelled recording rules of
promql_records.py), declared with each rule below.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeVar

from peerwatch.app.alerting.context import HostContext
from peerwatch.app.alerting.explains import (
    attributed_pairs,
    explained_gpus,
    held_pairs,
    host_below,
    nvlink_joins,
    pcie_short_gpus,
)
from peerwatch.app.alerting.promql import Twin
from peerwatch.app.alerting.rule import Finding, Rule, dashboard_path
from peerwatch.app.analysis.health import TestJudgement, Thresholds
from peerwatch.app.analysis.verdict import Verdict
from peerwatch.probes.report import Unit, unit_of
from peerwatch.probes.test_kinds import kind_of

Direction = tuple[int, int]  # (src, dst): data flows src -> dst
T = TypeVar("T")
ONE_WAY = " (one direction only)"


def by_pair(directions: Mapping[Direction, T]) -> dict[Direction, dict[Direction, T]]:
    """{(a, b): {direction: value}} with a < b: the ordered directions of each pair."""
    out: dict[Direction, dict[Direction, T]] = {}
    for (src, dst), value in sorted(directions.items()):
        out.setdefault((min(src, dst), max(src, dst)), {})[(src, dst)] = value
    return out


def directions_words(low: Mapping[Direction, Sequence[tuple[str, float]]]) -> str:
    """'GPU2->GPU5 ce_write 0.61; GPU5->GPU2 ce_read 0.64', each direction's low tests and
    ratios; a pair low one way only says so."""
    text = "; ".join(f"GPU{s}->GPU{d} " + ", ".join(f"{t} {r:.2f}" for t, r in tests)
                     for (s, d), tests in sorted(low.items()))
    return text + (ONE_WAY if len(low) == 1 else "")


def _ratio(j: TestJudgement) -> float | None:
    return min((r for r in (j.ratio_expected, j.ratio_baseline) if r is not None), default=None)


def _slow_directions(ctx: HostContext) -> dict[Direction, list[TestJudgement]]:
    """Each direction's tests judged degraded for low bandwidth (sustained or intermittent,
    contention ignored), less what explains them: a fault of either GPU (its own alert is
    the page), the pair attributed to a GPU or held while a pattern forms, and tests whose
    data crosses the PCIe link of a GPU trained below its maximum: staged copies always, and
    every test of a pair with no NVLink (PCIeLinkDowntrained is that page)."""
    explained, pcie = explained_gpus(ctx), pcie_short_gpus(ctx)
    left_out = attributed_pairs(ctx) | held_pairs(ctx)
    slow: dict[Direction, list[TestJudgement]] = {}
    for (src, dst, test), j in sorted(ctx.health.tests.items(),
                                      key=lambda kv: (kv[0][0], kv[0][1], kv[0][2])):
        if (unit_of(test) is not Unit.BYTES_PER_SECOND or j.verdict is not Verdict.DEGRADED
                or src == dst):
            continue  # src == dst: a per-GPU test, PCIeBandwidthDegraded's
        if j.low_since is None:
            continue  # a failed test, not a slow one: ProbeFailing says so
        if src in explained or dst in explained or (src, dst) in left_out:
            continue
        if (src in pcie or dst in pcie) and (kind_of(test).expect.model == "staged"
                                               or not nvlink_joins(ctx, src, dst)):
            continue
        slow.setdefault((src, dst), []).append(j)
    return slow


def p2p_bandwidth_degraded(ctx: HostContext) -> list[Finding]:
    """One alert per unordered pair with a direction left by `_slow_directions`."""
    return [_degraded_finding(ctx, a, b, low)
            for (a, b), low in by_pair(_slow_directions(ctx)).items()]


def _degraded_finding(ctx: HostContext, a: int, b: int,
                      low: Mapping[Direction, list[TestJudgement]]) -> Finding:
    tests = [j for js in low.values() for j in js]
    ratios = {d: [(j.test.value, r) for j in js if (r := _ratio(j)) is not None]
              for d, js in low.items()}
    worst = min(tests, key=lambda j: _ratio(j) or 9.0)
    values = [r for rs in ratios.values() for _, r in rs]
    return Finding(
        labels={"host": ctx.name, "gpu": str(a), "peer_gpu": str(b)},
        summary=f"GPU{a}<->GPU{b} on {ctx.name} is below its "
                f"{_below_what(worst, ctx.thresholds)}: {directions_words(ratios)}",
        description=" ".join(j.reason + "." for j in tests),  # each names its direction
        dashboard=dashboard_path(ctx.name, pair=(a, b), test=worst.test.value),
        value=min(values) if values else None)


def _below_what(j: TestJudgement, th: Thresholds) -> str:
    """Which expectation a slow pair missed: the topology's, its own baseline's, or both."""
    expected = j.ratio_expected is not None and j.ratio_expected < th.ratio_expected
    baseline = j.ratio_baseline is not None and j.ratio_baseline < th.ratio_baseline
    if expected and baseline:
        return "expected bandwidth and its baseline"
    return "baseline" if baseline else "expected bandwidth"


def _below_peers(ctx: HostContext) -> dict[Direction, dict]:
    """Each direction judged degraded for being far below its fleet peers while every test
    of it is healthy by its own expectation and baseline (else P2PBandwidthDegraded or
    ProbeFailing is the page), less what explains it (as `_slow_directions`)."""
    explained, left_out = explained_gpus(ctx), held_pairs(ctx)
    out: dict[Direction, dict] = {}
    for p in ctx.health.judgement.pairs:
        peer = ctx.health.pair_facts.get((p.src, p.dst), {}).get("peer")
        if (p.verdict is not Verdict.DEGRADED or not peer or not peer.get("flagged")
                or p.src in explained or p.dst in explained or p.explained_by is not None
                or (p.src, p.dst) in left_out
                or any(t.verdict is not Verdict.HEALTHY for t in p.tests)):
            continue
        out[(p.src, p.dst)] = {**peer, "reason": p.reason}
    return out


def p2p_below_fleet_peers(ctx: HostContext) -> list[Finding]:
    """One alert per unordered pair with a direction far below its fleet peers
    (docs/fleet-peers.md); none on a host below its peers as a whole (HostBelowFleetPeers)."""
    if host_below(ctx):
        return []
    out = []
    for (a, b), low in by_pair(_below_peers(ctx)).items():
        worst = min(low.values(), key=lambda peer: peer["ratio"])
        model, topology, driver = worst["group"]
        words = directions_words({d: [(peer["test"], peer["ratio"])] for d, peer in low.items()})
        reasons = " ".join(peer["reason"] + "." for peer in low.values())  # each names its way
        out.append(Finding(
            labels={"host": ctx.name, "gpu": str(a), "peer_gpu": str(b)},
            summary=f"GPU{a}<->GPU{b} on {ctx.name} is {worst['ratio']:.2f} of its fleet "
                    f"peers: {words}",
            description=f"{reasons} Its own baseline may have absorbed the slowdown; the same "
                        f"pair on {worst['hosts']} {model} {topology} hosts (driver {driver}) "
                        "is faster.",
            dashboard=dashboard_path(ctx.name, pair=(a, b), test=worst["test"]),
            value=worst["ratio"]))
    return out


SLOW_PAIR_RULES: tuple[Rule, ...] = (
    Rule("P2PBandwidthDegraded", "warning", 0.0, p2p_bandwidth_degraded,
         "the server judges a direction of a pair *degraded* for low bandwidth — measured below "
         "`PEERWATCH_DEGRADED_RATIO_EXPECTED` (0.7) of its full-width expectation or "
         "`PEERWATCH_DEGRADED_RATIO_BASELINE` (0.8) of its baseline, for "
         "`PEERWATCH_DEGRADED_SUSTAIN_S` (600 s: counted in time or in measurements at the "
         "test's own cadence, so one sweep interval is two low sweeps in a row whatever the "
         "jitter), or low in 3 of its newest 6 samples; one alert per unordered pair (`gpu` the "
         "lower index, `peer_gpu` the higher), whichever directions are low, the text naming "
         'each direction\'s slow tests and ratios ("GPU2<->GPU5 on h is below its baseline: '
         'GPU2->GPU5 ce_write 0.61; GPU5->GPU2 ce_read 0.64", or "(one direction only)"; '
         "[rules_slow_pairs.py](../app/alerting/rules_slow_pairs.py)); a direction is left out "
         "where a fault of either GPU (links down or lost, link errors, missing) explains it or "
         "the server attributes the pair to a GPU (a GPU slow with every peer: "
         "`GPUPeerCopiesSlow` is that page), nor for staged copies of a GPU with a downtrained "
         "PCIe link, nor while the pair's page waits for a GPU pattern still forming "
         "(`waits_for` in `/health`, at most `PEERWATCH_PATTERN_WAIT_S`, 1800 s; PromQL: `unless "
         "peerwatch_pair_page_held`, per direction); contended samples are never judged; `for` "
         "0: the sustain time is the wait",
         label_names="host, gpu, peer_gpu",
         series=(
             "peerwatch_fabric_event_findings", "peerwatch_gpu_nvlink_active_links",
             "peerwatch_gpu_nvlink_links", "peerwatch_gpu_present",
             "peerwatch_nvlink_crc_flit_errors_total", "peerwatch_nvlink_recovery_errors_total",
             "peerwatch_nvlink_replay_errors_total", "peerwatch_nvlink_up",
             "peerwatch_p2p_bandwidth_bytes_per_second", "peerwatch_p2p_contended",
             "peerwatch_p2p_nvlink_links", "peerwatch_p2p_pair_info", "peerwatch_pair_page_held",
             "peerwatch_pcie_link_generation", "peerwatch_pcie_link_max_generation",
             "peerwatch_pcie_link_max_width_lanes", "peerwatch_pcie_link_width_lanes",
             "peerwatch_probe_last_sweep_timestamp_seconds",
         ),
         twins=(
             Twin(
                 note=(
                     "One alert per unordered pair (gpu < peer_gpu): a test of either direction "
                     "below 0.80 of the pair's own baseline (the server's "
                     "PEERWATCH_DEGRADED_RATIO_BASELINE) in each of the last two sweeps "
                     "(PEERWATCH_DEGRADED_SUSTAIN_S, 600 s: two sweeps; counted in the "
                     "recording rule above, so no `for`). The server also judges against the "
                     "bandwidth the topology should give; the agents export measurements only. "
                     "Not where a fault of either end explains it; a direction through a "
                     "downtrained PCIe link or whose page is held is left out in the recording "
                     "rule."
                 ),
                 expr=(
                     "min by (host, gpu, peer_gpu) (peerwatch:p2p_pair_test_low_two_sweeps)\n"
                     "unless on (host, gpu) peerwatch:gpu_fault_explains_pairs\n"
                     "unless on (host, peer_gpu)\n"
                     '  label_replace(peerwatch:gpu_fault_explains_pairs, "peer_gpu", "$1", '
                     '"gpu", "(.*)")\n'
                 ),
                 for_="0m",
                 annotations={
                     "summary": (
                         "GPU{{ $labels.gpu }}<->GPU{{ $labels.peer_gpu }} on "
                         "{{ $labels.host }} is below its baseline bandwidth"
                     ),
                     "description": (
                         "GPU{{ $labels.gpu }}<->GPU{{ $labels.peer_gpu }} on "
                         '{{ $labels.host }} measures {{ $value | printf "%.2f" }} of its '
                         "uncontended 1-day median in its worst test, low in two sweeps in a "
                         'row:{{ range $i, $d := query (printf "count by (direction) '
                         "(peerwatch:p2p_pair_test_low_two_sweeps{host='%s',gpu='%s',peer_gpu='%s"
                         '\'})" $labels.host $labels.gpu $labels.peer_gpu) | sortByLabel '
                         '"direction" }}{{ if $i }};{{ end }} GPU{{ reReplaceAll "->" "->GPU" '
                         "$d.Labels.direction }}{{ range $j, $t := query (printf "
                         '"peerwatch:p2p_pair_test_low_two_sweeps{host=\'%s\',gpu=\'%s\',peer_gpu'
                         '=\'%s\',direction=\'%s\'}" $labels.host $labels.gpu $labels.peer_gpu '
                         '$d.Labels.direction) | sortByLabel "test" }}{{ if $j }},{{ end }} {{ '
                         '$t.Labels.test }} {{ $t.Value | printf "%.2f" }}{{ end }}{{ end }}{{ '
                         'with query (printf "count(count by (direction) '
                         "(peerwatch:p2p_pair_test_low_two_sweeps{host='%s',gpu='%s',peer_gpu='%s"
                         '\'}))" $labels.host $labels.gpu $labels.peer_gpu) }}{{ if eq (. | '
                         "first | value) 1.0 }} (one direction only){{ end }}{{ end }}."
                     ),
                     "dashboard": (
                         "/#/host/{{ $labels.host }}?pair={{ $labels.gpu }}-{{ $labels.peer_gpu "
                         "}}"
                     ),
                 },
             ),
             Twin(
                 note=(
                     "The intermittent pattern (3 of the newest 6 sweeps low, the recording "
                     "rule above), one alert per unordered pair. `pattern: intermittent` keeps "
                     "it apart from the sustained rule above, which owns the pair once it "
                     "fires. Same explained-by clauses."
                 ),
                 expr=(
                     "max by (host, gpu, peer_gpu) (peerwatch:p2p_pair_test_low_intermittent)\n"
                     "unless on (host, gpu) peerwatch:gpu_fault_explains_pairs\n"
                     "unless on (host, peer_gpu)\n"
                     '  label_replace(peerwatch:gpu_fault_explains_pairs, "peer_gpu", "$1", '
                     '"gpu", "(.*)")\n'
                     "unless on (host, gpu, peer_gpu)\n"
                     '  ALERTS{alertname="P2PBandwidthDegraded", alertstate="firing", '
                     'pattern=""}\n'
                 ),
                 for_="0m",
                 labels={"pattern": "intermittent"},
                 annotations={
                     "summary": (
                         "GPU{{ $labels.gpu }}<->GPU{{ $labels.peer_gpu }} on "
                         "{{ $labels.host }} is intermittently below its baseline bandwidth"
                     ),
                     "description": (
                         "GPU{{ $labels.gpu }}<->GPU{{ $labels.peer_gpu }} on "
                         "{{ $labels.host }} was low (below 0.80 of its uncontended 1-day "
                         "median) in {{ $value }} of its last 6 measurements in its worst test, "
                         "a fault that comes and goes; low in 3 or more of "
                         '6:{{ range $i, $d := query (printf "count by (direction) '
                         "(peerwatch:p2p_pair_test_low_intermittent{host='%s',gpu='%s',peer_gpu='"
                         '%s\'})" $labels.host $labels.gpu $labels.peer_gpu) | sortByLabel '
                         '"direction" }}{{ if $i }};{{ end }} GPU{{ reReplaceAll "->" "->GPU" '
                         "$d.Labels.direction }}{{ range $j, $t := query (printf "
                         '"peerwatch:p2p_pair_test_low_intermittent{host=\'%s\',gpu=\'%s\',peer_g'
                         'pu=\'%s\',direction=\'%s\'}" $labels.host $labels.gpu $labels.peer_gpu '
                         '$d.Labels.direction) | sortByLabel "test" }}{{ if $j }},{{ end }} {{ '
                         '$t.Labels.test }} {{ $t.Value | printf "%.0f" }}{{ end }}{{ end }}{{ '
                         'with query (printf "count(count by (direction) '
                         "(peerwatch:p2p_pair_test_low_intermittent{host='%s',gpu='%s',peer_gpu='"
                         '%s\'}))" $labels.host $labels.gpu $labels.peer_gpu) }}{{ if eq (. | '
                         "first | value) 1.0 }} (one direction only){{ end }}{{ end }}."
                     ),
                     "dashboard": (
                         "/#/host/{{ $labels.host }}?pair={{ $labels.gpu }}-{{ $labels.peer_gpu "
                         "}}"
                     ),
                 },
             ),
         )),
    Rule("P2PBelowFleetPeers", "warning", 0.0, p2p_below_fleet_peers,
         "the server judges a direction of a pair *degraded* for being below "
         "`PEERWATCH_FLEET_PEER_FLOOR` (0.93) of the median of the same pair on its peer group "
         "(GPU model, topology, driver; at least `PEERWATCH_FLEET_PEER_MIN_HOSTS` (5) hosts) "
         "while its own tests are healthy — a slowdown its baseline absorbed "
         "([fleet-peers.md](fleet-peers.md)); one alert per unordered pair (`gpu` < `peer_gpu`), "
         "naming each direction below, as `P2PBandwidthDegraded`; none where a fault of either "
         "GPU explains it, nor on a host below its peers as a whole (`HostBelowFleetPeers`). The "
         "PromQL twin reads `peerwatch_pair_fleet_peer_ratio`, exported for flagged pairs only",
         label_names="host, gpu, peer_gpu",
         series=(
             "peerwatch_fabric_event_findings", "peerwatch_gpu_nvlink_active_links",
             "peerwatch_gpu_nvlink_links", "peerwatch_gpu_present",
             "peerwatch_host_fleet_peer_ratio", "peerwatch_nvlink_crc_flit_errors_total",
             "peerwatch_nvlink_recovery_errors_total", "peerwatch_nvlink_replay_errors_total",
             "peerwatch_nvlink_up", "peerwatch_p2p_bandwidth_bytes_per_second",
             "peerwatch_p2p_nvlink_links", "peerwatch_p2p_pair_info",
             "peerwatch_pair_fleet_peer_ratio", "peerwatch_pair_page_held",
             "peerwatch_pcie_link_generation", "peerwatch_pcie_link_max_generation",
             "peerwatch_pcie_link_max_width_lanes", "peerwatch_pcie_link_width_lanes",
         ),
         twins=(
             Twin(
                 note=(
                     "The server judged the pair against the same pair on its peer group (GPU "
                     "model, topology, driver) and exports only the pairs below "
                     "PEERWATCH_FLEET_PEER_FLOOR; one alert per unordered pair (the recording "
                     "rule above). Not where a fault of either end or a downtrained PCIe link "
                     "on the way explains it (the agents' series, as for P2PBandwidthDegraded), "
                     "nor on a host below its peers as a whole."
                 ),
                 expr=(
                     "min by (host, gpu, peer_gpu) (peerwatch:p2p_pair_test_below_fleet_peers)\n"
                     "unless on (host) (max by (host) (peerwatch_host_fleet_peer_ratio) < 0.93)\n"
                     "unless on (host, gpu) peerwatch:gpu_fault_explains_pairs\n"
                     "unless on (host, peer_gpu)\n"
                     '  label_replace(peerwatch:gpu_fault_explains_pairs, "peer_gpu", "$1", '
                     '"gpu", "(.*)")\n'
                 ),
                 for_="0m",
                 annotations={
                     "summary": (
                         "GPU{{ $labels.gpu }}<->GPU{{ $labels.peer_gpu }} on "
                         '{{ $labels.host }} is {{ $value | printf "%.2f" }} of its fleet peers'
                     ),
                     "description": (
                         "GPU{{ $labels.gpu }}<->GPU{{ $labels.peer_gpu }} on "
                         '{{ $labels.host }} is {{ $value | printf "%.2f" }} of the median of '
                         "the same pair on its peer hosts (same GPU model, topology and driver) "
                         "in its worst "
                         'test:{{ range $i, $d := query (printf "count by (direction) '
                         "(peerwatch:p2p_pair_test_below_fleet_peers{host='%s',gpu='%s',peer_gpu="
                         '\'%s\'})" $labels.host $labels.gpu $labels.peer_gpu) | sortByLabel '
                         '"direction" }}{{ if $i }};{{ end }} GPU{{ reReplaceAll "->" "->GPU" '
                         "$d.Labels.direction }}{{ range $j, $t := query (printf "
                         '"peerwatch:p2p_pair_test_below_fleet_peers{host=\'%s\',gpu=\'%s\',peer_'
                         'gpu=\'%s\',direction=\'%s\'}" $labels.host $labels.gpu '
                         '$labels.peer_gpu $d.Labels.direction) | sortByLabel "test" }}{{ if $j '
                         '}},{{ end }} {{ $t.Labels.test }} {{ $t.Value | printf "%.2f" }}{{ '
                         'end }}{{ end }}{{ with query (printf "count(count by (direction) '
                         "(peerwatch:p2p_pair_test_below_fleet_peers{host='%s',gpu='%s',peer_gpu="
                         '\'%s\'}))" $labels.host $labels.gpu $labels.peer_gpu) }}{{ if eq (. | '
                         "first | value) 1.0 }} (one direction only){{ end }}{{ end "
                         "}}. Its own baseline may have absorbed the slowdown."
                     ),
                     "dashboard": (
                         "/#/host/{{ $labels.host }}?pair={{ $labels.gpu }}-{{ $labels.peer_gpu "
                         "}}"
                     ),
                 },
             ),
         )),
)
