"""The NVLink rules: a link down, fewer links than the GPU had, errors growing, a link
flapping, and P2P lost between GPUs the links join.

    NVLinkDown              critical  NVML reports a link down (labels host, gpu, link)
    NVLinkWidthReduced      warning   fewer active NVLinks than the ports the GPU has had
    NVLinkErrorsIncreasing  warning   replay/recovery counters grow, CRC faster than its rate
    NVLinkFlapping          warning   a link keeps going down and coming back
    P2PAccessLost           critical  GPUs joined by NVLink can no longer use P2P

They read the link verdicts and the fabric stored for the host (`ctx.links`, `ctx.fabric`);
an Xid the link logged is named in the page of its state (rules_events.py).
"""

from __future__ import annotations

from peerwatch.app.alerting.context import HostContext
from peerwatch.app.alerting.promql import Twin
from peerwatch.app.alerting.rule import Finding, Rule, dashboard_path
from peerwatch.app.alerting.rules_events import event_faulted_links, link_events
from peerwatch.app.alerting.switch_pages import switch_folded
from peerwatch.app.analysis.fabric_expect import design_links_for
from peerwatch.app.analysis.health import p2p_problem
from peerwatch.app.analysis.text import fmt_duration
from peerwatch.app.analysis.verdict import Verdict
from peerwatch.probes.report import LinkState

# A GPU whose down NVLinks went with a faulty NVSwitch: XidFault{switch} is their page
# (app/alerting/switch_pages.py); the server stores it as fabric kind `switch`.
SWITCH_FOLDED = ("\nunless on (host, gpu) (max by (host, gpu) "
                 '(peerwatch_gpu_fabric_problem{kind="switch"}) == 1)\n')


def nvlink_down(ctx: HostContext) -> list[Finding]:
    links = ctx.fabric.nvlinks
    events = link_events(ctx)  # the Xid the link logged, if any: this is its one page
    folded = switch_folded(ctx)  # down with a faulty NVSwitch: XidFault{switch}'s page
    out = []
    for j in ctx.links:
        if j.verdict is not Verdict.DOWN or j.gpu in folded:
            continue
        mine = [p for p in links if p.gpu == j.gpu]
        up = sum(1 for p in mine if p.state is LinkState.UP)
        seen = f" The agent saw {events[(j.gpu, j.link)]}." if (j.gpu, j.link) in events else ""
        out.append(Finding(
            labels={"host": ctx.name, "gpu": str(j.gpu), "link": str(j.link)},
            summary=f"NVLink {j.link} of GPU{j.gpu} on {ctx.name} is down",
            description=f"{j.reason}; GPU{j.gpu} has {up} of {len(mine)} NVLinks up.{seen}",
            dashboard=dashboard_path(ctx.name, gpu=j.gpu), value=0.0))
    return out


def nvlink_width_reduced(ctx: HostContext) -> list[Finding]:
    out = []
    folded = switch_folded(ctx)
    for gpu, had in sorted(ctx.ports_had.items()):
        if gpu not in ctx.fabric.gpus or gpu in folded:
            continue  # missing: the host verdict's business; behind a lost switch: its page
        up = sum(1 for p in ctx.fabric.links_of(gpu) if p.state is LinkState.UP)
        had = design_links_for(ctx.fabric.gpus[gpu].name, had)[0]  # 12 of 18 by design: 12
        if up >= had:
            continue
        out.append(Finding(
            labels={"host": ctx.name, "gpu": str(gpu)},
            summary=f"GPU{gpu} on {ctx.name} has {up} of its {had} NVLinks active",
            description=f"GPU{gpu} on {ctx.name} runs with {up} active NVLinks of the {had} "
                        f"it has had: its NVSwitch/peer bandwidth is cut to {up}/{had}.",
            dashboard=dashboard_path(ctx.name, gpu=gpu), value=float(up)))
    return out


def nvlink_errors_increasing(ctx: HostContext) -> list[Finding]:
    """Links whose error counters grow (rate over PEERWATCH_LINK_RATE_WINDOW_S); a link an
    Xid fault made degraded is XidFault's page, which says it explains this one."""
    by_event = event_faulted_links(ctx)
    return [Finding(
        labels={"host": ctx.name, "gpu": str(j.gpu), "link": str(j.link)},
        summary=f"NVLink {j.link} of GPU{j.gpu} on {ctx.name}: errors are increasing",
        description=f"{j.reason} (replay/recovery: any growth over "
                    f"{ctx.thresholds.error_rate_per_s:g}/s; CRC flit: over "
                    f"{ctx.thresholds.crc_rate_per_s:g}/s, over the last "
                    f"{fmt_duration(ctx.settings.link_rate_window_s)}).",
        dashboard=dashboard_path(ctx.name, gpu=j.gpu))
        for j in ctx.links if j.verdict is Verdict.DEGRADED and not j.flapping
        and (j.gpu, j.link) not in by_event]


def nvlink_flapping(ctx: HostContext) -> list[Finding]:
    """Links that keep going down and coming back (up now, so NVLinkDown has resolved);
    the Xid each drop logged is this page's, named here."""
    events = link_events(ctx)
    return [Finding(
        labels={"host": ctx.name, "gpu": str(j.gpu), "link": str(j.link)},
        summary=f"NVLink {j.link} of GPU{j.gpu} on {ctx.name} is flapping",
        description=f"{j.reason}: reseat or replace the cable/board before it takes a job "
                    "down with it." + (f" The agent saw {events[(j.gpu, j.link)]}."
                                       if (j.gpu, j.link) in events else ""),
        dashboard=dashboard_path(ctx.name, gpu=j.gpu))
        for j in ctx.links if j.flapping]


def p2p_access_lost(ctx: HostContext) -> list[Finding]:
    out = []
    for (src, dst), pair in sorted(ctx.fabric.pairs.items()):
        problem = p2p_problem(pair)
        if problem is None:
            continue
        out.append(Finding(
            labels={"host": ctx.name, "gpu": str(src), "peer_gpu": str(dst)},
            summary=f"GPU{src} on {ctx.name} lost P2P access to GPU{dst}",
            description=problem + ".",
            dashboard=dashboard_path(ctx.name, pair=(src, dst)), value=0.0))
    return out


LINK_RULES: tuple[Rule, ...] = (
    Rule("NVLinkDown", "critical", 60.0, nvlink_down,
         "NVML reports an NVLink port down (not one lost with a faulty NVSwitch: that "
         "switch's `XidFault` lists it)",
         label_names="host, gpu, link",
         series=("peerwatch_nvlink_up", "peerwatch_gpu_fabric_problem"),
         twins=(
             Twin(
                 note="`peer_gpu` lets Alertmanager mute pair alerts whose peer this is.",
                 expr=("peerwatch_nvlink_up == 0" + SWITCH_FOLDED),
                 for_="1m",
                 labels={"peer_gpu": "{{ $labels.gpu }}"},
                 annotations={
                     "summary": (
                         "NVLink {{ $labels.link }} of GPU{{ $labels.gpu }} on "
                         "{{ $labels.host }} is down"
                     ),
                     "description": (
                         "NVML reports link {{ $labels.link }} of GPU{{ $labels.gpu }} on "
                         "{{ $labels.host }} as down; traffic to its peers uses the remaining "
                         "links or PCIe."
                     ),
                     "dashboard": "/#/host/{{ $labels.host }}?gpu={{ $labels.gpu }}",
                 },
             ),
         )),
    Rule("NVLinkWidthReduced", "warning", 60.0, nvlink_width_reduced,
         "a GPU has fewer active NVLinks than the ports it has had (reported now or seen before; "
         "a SKU's designed count where it wires fewer); not for links lost with a faulty "
         "NVSwitch (its `XidFault` is the page)",
         label_names="host, gpu",
         series=("peerwatch_gpu_nvlink_active_links", "peerwatch_gpu_nvlink_links",
                 "peerwatch_gpu_fabric_problem"),
         twins=(
             Twin(
                 note=(
                     "Fewer active links than the ports this GPU has had (reported now or since "
                     "the agent started)."
                 ),
                 expr=("peerwatch_gpu_nvlink_active_links < peerwatch_gpu_nvlink_links"
                       + SWITCH_FOLDED),
                 for_="1m",
                 labels={"peer_gpu": "{{ $labels.gpu }}"},
                 annotations={
                     "summary": (
                         "GPU{{ $labels.gpu }} on {{ $labels.host }} has fewer active NVLinks "
                         "than before"
                     ),
                     "description": (
                         "GPU{{ $labels.gpu }} on {{ $labels.host }} has {{ $value }} active "
                         "NVLinks, fewer than its ports."
                     ),
                     "dashboard": "/#/host/{{ $labels.host }}?gpu={{ $labels.gpu }}",
                 },
             ),
         )),
    Rule("NVLinkErrorsIncreasing", "warning", 0.0, nvlink_errors_increasing,
         "a link's replay or recovery counter grows faster than "
         "`PEERWATCH_ERROR_RATE_DEGRADED_PER_S` (0: any growth), or its CRC flit counter faster "
         "than `PEERWATCH_CRC_RATE_DEGRADED_PER_S` (1/s; CRC_DATA/ECC_DATA count corrected "
         "errors, grow 10-142/s on healthy H200s under load, and never alert), over "
         "`PEERWATCH_LINK_RATE_WINDOW_S` (900 s); counter resets are handled",
         label_names="host, gpu, link",
         series=(
             "peerwatch_nvlink_crc_flit_errors_total", "peerwatch_nvlink_recovery_errors_total",
             "peerwatch_nvlink_replay_errors_total",
         ),
         twins=(
             Twin(
                 note=(
                     "Any replay or recovery increase; CRC flit errors above 1 per second. "
                     "`counter` names which. crc_data/ecc_data count corrected errors: they "
                     "grow under load on healthy NVLink 4 links (10-142/s measured on H200s), "
                     "so they never alert."
                 ),
                 expr=(
                     "label_replace(increase(peerwatch_nvlink_replay_errors_total[10m]) > 0,\n"
                     '              "counter", "replay", "", "")\n'
                     "or\n"
                     "label_replace(increase(peerwatch_nvlink_recovery_errors_total[10m]) > 0,\n"
                     '              "counter", "recovery", "", "")\n'
                     "or\n"
                     "label_replace(rate(peerwatch_nvlink_crc_flit_errors_total[10m]) > 1,\n"
                     '              "counter", "crc_flit", "", "")\n'
                 ),
                 for_="0m",
                 labels={"peer_gpu": "{{ $labels.gpu }}"},
                 annotations={
                     "summary": (
                         "NVLink {{ $labels.link }} of GPU{{ $labels.gpu }} on "
                         "{{ $labels.host }}: {{ $labels.counter }} errors are increasing"
                     ),
                     "description": (
                         "{{ $labels.counter }} errors on link {{ $labels.link }} of "
                         "GPU{{ $labels.gpu }} on {{ $labels.host }} grew by "
                         '{{ $value | printf "%.3g" }} (increase over 10 min for '
                         "replay/recovery, per second for CRC)."
                     ),
                     "dashboard": "/#/host/{{ $labels.host }}?gpu={{ $labels.gpu }}",
                 },
             ),
         )),
    Rule("NVLinkFlapping", "warning", 0.0, nvlink_flapping,
         "a port went down `PEERWATCH_LINK_FLAP_DOWNS` (2) times within "
         "`PEERWATCH_LINK_FLAP_WINDOW_S` (1 h) and is up now",
         label_names="host, gpu, link",
         series=("peerwatch_nvlink_up",),
         twins=(
             Twin(
                 note=(
                     "Up now, but it went down twice within the hour (four state changes): "
                     "NVLinkDown never lasted its 1m, and the link is not to be trusted."
                 ),
                 expr="(peerwatch_nvlink_up == 1) and (changes(peerwatch_nvlink_up[1h]) >= 4)",
                 labels={"peer_gpu": "{{ $labels.gpu }}"},
                 annotations={
                     "summary": (
                         "NVLink {{ $labels.link }} of GPU{{ $labels.gpu }} on "
                         "{{ $labels.host }} is flapping"
                     ),
                     "description": (
                         "Link {{ $labels.link }} of GPU{{ $labels.gpu }} on {{ $labels.host }} "
                         "went down twice or more in the last hour (up now): reseat or replace "
                         "the cable/board before it takes a job down with it."
                     ),
                     "dashboard": "/#/host/{{ $labels.host }}?gpu={{ $labels.gpu }}",
                 },
             ),
         )),
    Rule("P2PAccessLost", "critical", 0.0, p2p_access_lost,
         "GPUs joined by NVLink cannot use P2P (NVML read/write status not OK, or "
         "`cudaDeviceCanAccessPeer` false)",
         label_names="host, gpu, peer_gpu",
         series=("peerwatch_p2p_access",),
         twins=(
             Twin(
                 note="P2P was possible between these GPUs within the last day and is not now.",
                 expr="peerwatch_p2p_access == 0 and max_over_time(peerwatch_p2p_access[1d]) == 1",
                 for_="0m",
                 annotations={
                     "summary": (
                         "GPU{{ $labels.gpu }} on {{ $labels.host }} lost P2P access to "
                         "GPU{{ $labels.peer_gpu }}"
                     ),
                     "description": (
                         "P2P between GPU{{ $labels.gpu }} and GPU{{ $labels.peer_gpu }} on "
                         "{{ $labels.host }} worked within the last day and is now refused; "
                         "copies are staged through host memory."
                     ),
                     "dashboard": (
                         "/#/host/{{ $labels.host }}?pair={{ $labels.gpu }}-{{ $labels.peer_gpu "
                         "}}"
                     ),
                 },
             ),
         )),
)
