"""The server's alert rules. Each reads the server's own judgement of one host (`ctx.health`,
from `app.queries.host_health`) and never re-derives it; the PromQL twins of these rules are
in deploy/prometheus/peerwatch-rules.yml. Thresholds are settings (docs/alerts.md):
ratios, sustain time and error rates from `app.runtime.config.Settings`, the rest from
`AlertingSettings`; `for` durations from PEERWATCH_ALERT_FOR_S.
"""

from __future__ import annotations

from peerwatch.app.alerting.context import HostContext
from peerwatch.app.alerting.explains import (
    explained_gpus,
    host_below,
    pcie_short_gpus,
    throttled_gpus,
)
from peerwatch.app.alerting.rule import Finding, Rule, dashboard_path
from peerwatch.app.alerting.rules_events import (
    EVENT_RULES,
    event_explained,
    event_faulted_links,
    link_events,
)
from peerwatch.app.alerting.rules_fabric import FABRIC_RULES, per_gpu
from peerwatch.app.alerting.rules_gpu import GPU_RULES
from peerwatch.app.alerting.rules_pair_faults import PAIR_FAULT_RULES
from peerwatch.app.alerting.rules_slow_pairs import p2p_bandwidth_degraded, p2p_below_fleet_peers
from peerwatch.app.analysis.clock import describe_skew, skew_way
from peerwatch.app.analysis.fabric_expect import design_links_for
from peerwatch.app.analysis.fabric_health import PEER_SLOW
from peerwatch.app.analysis.health import TestJudgement, p2p_problem
from peerwatch.app.analysis.text import fmt_duration
from peerwatch.app.analysis.verdict import Verdict
from peerwatch.app.store.tables.inventory import last_heard_at
from peerwatch.probes.report import GPU_TESTS, PCIE_TESTS, LinkState


def nvlink_down(ctx: HostContext) -> list[Finding]:
    links = ctx.fabric.nvlinks
    events = link_events(ctx)  # the Xid the link logged, if any: this is its one page
    out = []
    for j in ctx.links:
        if j.verdict is not Verdict.DOWN:
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
    for gpu, had in sorted(ctx.ports_had.items()):
        if gpu not in ctx.fabric.gpus:
            continue  # a GPU missing from the inventory is the host verdict's business
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


def host_below_fleet_peers(ctx: HostContext) -> list[Finding]:
    """One alert for a host whose median ratio over its checked pair tests is below the floor
    (docs/fleet-peers.md): a slow board, not 56 slow pairs."""
    peers = ctx.health.peers
    if not host_below(ctx) or ctx.health.stale:
        return []
    model, topology, driver = peers.get("group") or ("?", "?", "?")
    gpus = ", ".join(f"GPU{g}" for g in peers.get("gpus_below", []))
    return [Finding(
        labels={"host": ctx.name},
        summary=f"{ctx.name} is {peers['ratio']:.2f} of its fleet peers ({model} {topology}, "
                f"driver {driver}): {peers.get('pairs_below', 0)} pairs below",
        description=f"{ctx.name} is {peers['ratio']:.2f} of its fleet peers: the median over "
                    f"its {peers['checked']} checked pair tests, {peers['flagged']} of them "
                    f"below the floor, {peers.get('pairs_below', 0)} ordered pairs, on "
                    f"{gpus or 'no GPU'}; mostly against {model} {topology} on driver {driver}. "
                    "A whole board slow (power cap, clocks, a bad riser or baseboard): one "
                    "alert for the host, none per pair.",
        dashboard=dashboard_path(ctx.name), value=float(peers["ratio"]))]


def gpu_below_fleet_peers(ctx: HostContext) -> list[Finding]:
    """One alert per GPU the server calls degraded for its own copies (h2d, d2h, local)
    being far below the same GPU model on the same PCIe link and driver, while its own tests
    are healthy (else PCIeBandwidthDegraded is the page); none where a fault of the GPU
    explains it (a downtrained link has no group) or it is held below its clocks most of
    the time (GPUThrottled is the page), nor on a host below its peers as a whole."""
    if host_below(ctx):
        return []
    explained = set(explained_gpus(ctx)) | throttled_gpus(ctx)
    out = []
    for g in ctx.health.judgement.gpus:
        peer = ctx.health.gpu_facts.get(g.gpu, {}).get("peer")
        own = [j for (s, d, _), j in ctx.health.tests.items() if s == d == g.gpu]
        if (g.verdict is not Verdict.DEGRADED or not peer or not peer.get("flagged")
                or g.gpu in explained or any(j.verdict is not Verdict.HEALTHY for j in own)):
            continue
        model, link, driver = peer["group"]
        out.append(Finding(
            labels={"host": ctx.name, "gpu": str(g.gpu)},
            summary=f"GPU{g.gpu} on {ctx.name} is {peer['ratio']:.2f} of its fleet peers "
                    f"({peer['test']})",
            description=f"{g.reason}. Its own baseline may have absorbed the slowdown; the "
                        f"same GPU on {peer['hosts']} {model} {link} hosts (driver {driver}) "
                        "is faster: suspect the slot, riser, retimer or the host side.",
            dashboard=dashboard_path(ctx.name, gpu=g.gpu), value=peer["ratio"]))
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


def probe_stale(ctx: HostContext) -> list[Finding]:
    """The stored host verdict's staleness (server clock, PEERWATCH_STALE_AFTER_S): the
    same threshold the host verdict and the scheduler use."""
    if not ctx.health.stale:
        return []
    heard = last_heard_at(ctx.host)
    age = (ctx.now - heard).total_seconds() if heard else None
    since = f"for {fmt_duration(age)}" if age is not None else "ever"
    return [Finding(
        labels={"host": ctx.name},
        summary=f"No report from {ctx.name} {since}",
        description=f"The peerwatch probe on {ctx.name} has not been heard from {since} "
                    f"(limit {fmt_duration(ctx.settings.stale_after_s)}, by the server's "
                    "clock); its fabric is not being watched and its GPUs are not scheduled.",
        dashboard=dashboard_path(ctx.name), value=age)]


def probe_clock_skew(ctx: HostContext) -> list[Finding]:
    """The probe's clock is off: its timestamps (sample times, series) are shifted. A
    warning, never staleness: staleness is judged by the server's clock. The sign is
    `app/analysis/clock.py`'s, the one the API and /metrics carry; the words are rendered
    from the skew read now (the engine evaluates while the alert is active)."""
    skew = ctx.host.clock_skew_s
    limit = ctx.alerting.clock_skew_warn_s
    if skew is None or abs(skew) <= limit or ctx.health.stale:
        return []
    return [Finding(
        labels={"host": ctx.name},
        summary=f"The probe clock on {ctx.name} is {describe_skew(skew)}",
        description=f"Reports from {ctx.name} arrive {skew:+.0f} s off the time they carry "
                    f"(limit ±{limit:g} s): the probe host's clock is {skew_way(skew)} the "
                    "server's. Fix its time sync (chrony/NTP); peerwatch judges staleness by "
                    "its own clock, but the host's sample times are shifted.",
        dashboard=dashboard_path(ctx.name), value=skew)]


def gpu_missing(ctx: HostContext) -> list[Finding]:
    """A GPU seen before is missing from the newest inventory (fell off the bus, Xid 79):
    the one page of that fault, naming the Xid the agent saw (XidFault leaves it out)."""
    out = []
    events = event_explained(ctx)
    for gpu, row in sorted(ctx.fabric.missing_gpus.items()):
        seen = f" The agent saw {events[gpu]}." if gpu in events else ""
        out.append(Finding(
            labels={"host": ctx.name, "gpu": str(gpu)},
            summary=f"GPU{gpu} is missing from {ctx.name}",
            description=f"GPU{gpu} ({row.name}, {row.pci_bus_id}, {row.uuid}) was last seen "
                        f"at {row.last_seen_at:%Y-%m-%d %H:%M:%S} UTC and is missing from the "
                        "newest inventory: it fell off the bus (Xid 79) or was reset. Its "
                        "pairs are not judged and the scheduler leaves it out." + seen,
            dashboard=dashboard_path(ctx.name, gpu=gpu), value=0.0))
    return out


def probe_failing(ctx: HostContext) -> list[Finding]:
    failed = ctx.latest_sweep_failures
    if not failed:
        return []
    shown = "; ".join(
        f"{f.test} " + ("GPUs " + ",".join(map(str, f.gpus)) if f.src is None
                        else f"GPU{f.src}" if f.dst in (None, f.src)
                        else f"GPU{f.src}->GPU{f.dst}") + f": {f.error[:200]}"
        for f in failed[:3])
    more = f" (+{len(failed) - 3} more)" if len(failed) > 3 else ""
    return [Finding(
        labels={"host": ctx.name},
        summary=f"{len(failed)} transfer tests failed in the latest sweep on {ctx.name}",
        description=f"The latest sweep on {ctx.name} recorded {len(failed)} failed transfer "
                    f"tests: {shown}{more}.",
        dashboard=dashboard_path(ctx.name), value=float(len(failed)))]


RULES: tuple[Rule, ...] = (
    Rule("NVLinkDown", "critical", 60.0, nvlink_down, "NVML reports a link down."),
    Rule("NVLinkWidthReduced", "warning", 60.0, nvlink_width_reduced,
         "Fewer active NVLinks than the ports the GPU has had."),
    Rule("P2PBandwidthDegraded", "warning", 0.0, p2p_bandwidth_degraded,
         "The server's verdict 'degraded' for low bandwidth, one per unordered pair (gpu < "
         "peer_gpu) whichever directions are low; none where a fault of either GPU explains "
         "it."),
    Rule("GPUPeerCopiesSlow", "warning", 0.0, gpu_peer_copies_slow,
         "A GPU's copies judged slow with every peer (its peers fast with each other): the "
         "GPU, not its pairs, is the fault; none where its links or PCIe link explain it, nor "
         "on a host below its fleet peers."),
    Rule("P2PBelowFleetPeers", "warning", 0.0, p2p_below_fleet_peers,
         "A pair below PEERWATCH_FLEET_PEER_FLOOR of its peer group's median (same GPU model, "
         "topology, driver; at least PEERWATCH_FLEET_PEER_MIN_HOSTS hosts), one per unordered "
         "pair (gpu < peer_gpu); none where its own tests or a fault of either GPU already "
         "page, nor on a host below its peers as a whole."),
    Rule("GPUBelowFleetPeers", "warning", 0.0, gpu_below_fleet_peers,
         "A GPU's own copies (h2d, d2h, local) below PEERWATCH_FLEET_PEER_FLOOR of its peer "
         "group's median (same GPU model, PCIe link, driver), one per GPU; none where its own "
         "tests already page, its link is downtrained, or its host is below as a whole."),
    Rule("HostBelowFleetPeers", "warning", 0.0, host_below_fleet_peers,
         "A host's median ratio over its checked pair tests below PEERWATCH_FLEET_PEER_FLOOR: one "
         "alert for the host instead of one per pair."),
    Rule("NVLinkErrorsIncreasing", "warning", 0.0, nvlink_errors_increasing,
         "Replay/recovery counters grow at all, CRC/ECC faster than the set rate."),
    Rule("NVLinkFlapping", "warning", 0.0, nvlink_flapping,
         "A link went down PEERWATCH_LINK_FLAP_DOWNS times within PEERWATCH_LINK_FLAP_WINDOW_S."),
    Rule("P2PAccessLost", "critical", 0.0, p2p_access_lost,
         "GPUs joined by NVLink can no longer use P2P."),
    Rule("PCIeLinkDowntrained", "warning", 900.0, pcie_link_downtrained,
         "PCIe width (and generation, unless turned off) below the maximum."),
    Rule("PCIeBandwidthDegraded", "warning", 0.0, pcie_bandwidth_degraded,
         "The server's verdict 'degraded' for a GPU's own copies (h2d, d2h against its PCIe "
         "link and baseline; local against its baseline), one per GPU; none where "
         "PCIeLinkDowntrained explains it."),
    Rule("ProbeStale", "warning", 0.0, probe_stale,
         "No report for PEERWATCH_STALE_AFTER_S (the host verdict's staleness)."),
    Rule("ProbeClockSkew", "warning", 600.0, probe_clock_skew,
         "The probe's clock is off from the server's by more than PEERWATCH_CLOCK_SKEW_WARN_S."),
    Rule("GPUMissing", "critical", 0.0, gpu_missing,
         "A GPU seen before is missing from the newest inventory."),
    Rule("ProbeFailing", "warning", 0.0, probe_failing,
         "Transfer tests failed in the latest sweep."),
    *FABRIC_RULES,
    *EVENT_RULES,
    *GPU_RULES,
    *PAIR_FAULT_RULES,
)
RULE_NAMES = frozenset(r.name for r in RULES)
