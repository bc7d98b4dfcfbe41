"""The rules of what the probe sends: silence, a skewed clock, a GPU gone, tests failing.

    ProbeStale      warning   no report for PEERWATCH_STALE_AFTER_S, by the server's clock
    ProbeClockSkew  warning   the probe's clock off the server's by more than its limit
    GPUMissing      critical  a GPU seen before, or on the PCI bus, is missing from the newest
                              inventory
    ProbeFailing    warning   transfer tests failed in the latest sweep
"""

from __future__ import annotations

from peerwatch.app.alerting.context import HostContext
from peerwatch.app.alerting.promql import Twin
from peerwatch.app.alerting.rule import Finding, Rule, dashboard_path
from peerwatch.app.alerting.rules_events import event_explained, off_bus
from peerwatch.app.analysis.clock import describe_skew, skew_way
from peerwatch.app.analysis.gpu_evidence import expected_only
from peerwatch.app.analysis.text import fmt_duration
from peerwatch.app.store.tables.inventory import Gpu, last_heard_at


def probe_stale(ctx: HostContext) -> list[Finding]:
    """The stored host verdict's staleness (server clock, PEERWATCH_STALE_AFTER_S): the
    same threshold the host verdict and the scheduler use. Not paged while a restarted
    server's fleet comes back (app/alerting/listening.py)."""
    if not ctx.health.stale:
        return []
    heard = last_heard_at(ctx.host)
    if ctx.listening is not None and ctx.listening.excuses(heard, ctx.now,
                                                           ctx.settings.stale_after_s):
        return []
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


def _missing_text(gpu: int, row: Gpu) -> str:
    """A GPU NVML named (seen by the server, or by the agent since boot), or one known only
    from the PCI bus (no UUID: NVML never listed it to anyone)."""
    if expected_only(row.pci_bus_id):
        return (f"GPU{gpu} is one of the GPUs this host should have (the agent's "
                "PEERWATCH_PROBE_EXPECTED_GPUS) that neither NVML nor the PCI bus lists: it "
                "fell off the bus, or its slot, riser or board lost it.")
    if not row.uuid:
        return (f"GPU{gpu} ({row.name}, {row.pci_bus_id}) is on the PCI bus but NVML does not "
                "list it: it fell off the bus (Xid 79) or its driver never started.")
    return (f"GPU{gpu} ({row.name}, {row.pci_bus_id}, {row.uuid}) was last seen at "
            f"{row.last_seen_at:%Y-%m-%d %H:%M:%S} UTC and is missing from the newest "
            "inventory: it fell off the bus (Xid 79) or was reset.")


def gpu_missing(ctx: HostContext) -> list[Finding]:
    """A GPU seen before is missing from the newest inventory (fell off the bus, Xid 79):
    the one page of that fault, naming the Xid the agent saw (XidFault leaves it out). Seen
    by this server, or named by the probe's evidence (the PCI bus, the GPUs seen since
    boot: app/ingest/gpu_evidence.py), so a server's first report is judged whole too."""
    out = []
    events = event_explained(ctx)
    for gpu, row in sorted(ctx.fabric.missing_gpus.items()):
        seen = f" The agent saw {events[gpu]}." if gpu in events else ""
        out.append(Finding(
            labels={"host": ctx.name, "gpu": str(gpu)},
            summary=f"GPU{gpu} is missing from {ctx.name}",
            description=_missing_text(gpu, row) + " Its pairs are not judged and the "
                        "scheduler leaves it out." + seen,
            dashboard=dashboard_path(ctx.name, gpu=gpu), value=0.0))
    return out + _off_bus_still_listed(ctx)


def _off_bus_still_listed(ctx: HostContext) -> list[Finding]:
    """A GPU that logged Xid 79 (fallen off the bus) while the report still lists it: the
    same fault as its disappearance a report later, so the same alert (one page, whichever
    report carries which; XidFault leaves Xid 79 to this rule)."""
    return [Finding(
        labels={"host": ctx.name, "gpu": str(gpu)},
        summary=f"GPU{gpu} is missing from {ctx.name}",
        description=f"GPU{gpu} of {ctx.name} logged {f.entry.label} ({f.entry.name}) and is "
                    "gone for every use, though the newest inventory still lists it (the "
                    "driver reports it lost on the next read). Its pairs are not trusted and "
                    f"the scheduler leaves it out. {f.reason()}.",
        dashboard=dashboard_path(ctx.name, gpu=gpu), value=0.0)
        for gpu, f in sorted(off_bus(ctx).items()) if gpu not in ctx.fabric.missing_gpus]


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


PROBE_RULES: tuple[Rule, ...] = (
    Rule("ProbeStale", "warning", 0.0, probe_stale,
         "the host verdict is stale: no report for `PEERWATCH_STALE_AFTER_S` (90 s) by the "
         "server's clock — the same limit the verdict and the scheduler use",
         label_names="host",
         series=("peerwatch_probe_last_received_timestamp_seconds",
                 "peerwatch_server_listening_since_timestamp_seconds",
                 "peerwatch_server_quiet_from_timestamp_seconds"),
         twins=(
             Twin(
                 note=(
                     "Three inventory intervals (3 x 30 s) without a report, by the server's "
                     "clock (the server's /metrics; `max by` so that scraping several replicas "
                     "pages once); unless, within 390 s of every replica's start, the host "
                     "was last heard before it and was fresh when the server went quiet: its "
                     "probe may still be backing off (app/alerting/listening.py)."
                 ),
                 expr=(
                     "time() - max by (host) (peerwatch_probe_last_received_timestamp_seconds) "
                     "> 90\n"
                     "unless on (host) (\n"
                     "  max by (host) (peerwatch_probe_last_received_timestamp_seconds)\n"
                     "    < on () group_left ()\n"
                     "      min(peerwatch_server_listening_since_timestamp_seconds)\n"
                     "    >= on () group_left ()\n"
                     "      (min(peerwatch_server_quiet_from_timestamp_seconds) - 90)\n"
                     "  and on ()\n"
                     "  (time() - min(peerwatch_server_listening_since_timestamp_seconds) < 390)\n"
                     ")"
                 ),
                 for_="0m",
                 annotations={
                     "summary": (
                         "No report from {{ $labels.host }} for {{ $value | humanizeDuration }}"
                     ),
                     "description": (
                         "The server last received a report from the peerwatch probe on "
                         "{{ $labels.host }} {{ $value | humanizeDuration }} ago; its fabric is "
                         "not being watched."
                     ),
                     "dashboard": "/#/host/{{ $labels.host }}",
                 },
             ),
         )),
    Rule("ProbeClockSkew", "warning", 600.0, probe_clock_skew,
         "reports arrive more than `PEERWATCH_CLOCK_SKEW_WARN_S` (60 s) off the time they carry "
         "(the probe's clock); never a stale page",
         label_names="host",
         series=(
             "peerwatch_probe_clock_skew_seconds",
             "peerwatch_probe_last_received_timestamp_seconds",
         ),
         twins=(
             Twin(
                 note=(
                     "Reports arrive more than 60 s (PEERWATCH_CLOCK_SKEW_WARN_S) off the time "
                     "they carry, for 10 min; a stale host is ProbeStale's, not this. Staleness "
                     "uses the server's clock."
                 ),
                 expr=(
                     "abs(max by (host) (peerwatch_probe_clock_skew_seconds)) > 60\n"
                     "unless on (host)\n"
                     "time() - max by (host) (peerwatch_probe_last_received_timestamp_seconds) "
                     "> 90\n"
                 ),
                 for_="10m",
                 annotations={
                     "summary": (
                         "The probe clock on {{ $labels.host }} is "
                         "{{ $value | humanizeDuration }} off the server's"
                     ),
                     "description": (
                         "Reports from {{ $labels.host }} arrive "
                         "{{ $value | humanizeDuration }} off the time they carry (limit 60 s): "
                         "fix its time sync (chrony/NTP). Staleness is judged by the server's "
                         "clock, but the host's sample times are shifted."
                     ),
                     "dashboard": "/#/host/{{ $labels.host }}",
                 },
             ),
         )),
    Rule("GPUMissing", "critical", 0.0, gpu_missing,
         "a GPU seen before (by the server, by the agent since boot), on the PCI bus or in "
         "the host's expected count is missing from the newest inventory, or logged Xid 79 "
         "(fell off the bus) while still listed: one page whichever comes first; its pairs "
         "are unknown and the scheduler leaves it out",
         label_names="host, gpu",
         series=("peerwatch_gpu_present", "peerwatch_fabric_event_findings"),
         twins=(
             Twin(
                 note=(
                     "A GPU seen before is missing from the host's newest inventory (fell off "
                     "the bus, Xid 79): the server's inventory knows it, an agent restarted "
                     "since would not."
                 ),
                 expr=(
                     "max by (host, gpu) (peerwatch_gpu_present) == 0\n"
                     "or on (host, gpu) (max by (host, gpu) (peerwatch_fabric_event_findings"
                     '{level="fault", xid="xid79"}) > bool 0) == 1\n'
                 ),
                 for_="0m",
                 labels={"peer_gpu": "{{ $labels.gpu }}"},
                 annotations={
                     "summary": "GPU{{ $labels.gpu }} is missing from {{ $labels.host }}",
                     "description": (
                         "GPU{{ $labels.gpu }} of {{ $labels.host }} was seen before and is "
                         "missing from the newest inventory: it fell off the bus (Xid 79) or "
                         "was reset. Its pairs are not judged and the scheduler leaves it out."
                     ),
                     "dashboard": "/#/host/{{ $labels.host }}?gpu={{ $labels.gpu }}",
                 },
             ),
         )),
    Rule("ProbeFailing", "warning", 0.0, probe_failing,
         "transfer tests failed in the host's latest sweep",
         label_names="host",
         series=("peerwatch_probe_transfer_errors",),
         twins=(
             Twin(
                 expr="peerwatch_probe_transfer_errors > 0",
                 for_="0m",
                 annotations={
                     "summary": (
                         "{{ $value }} transfer tests failed in the latest sweep on "
                         "{{ $labels.host }}"
                     ),
                     "description": (
                         "The latest sweep on {{ $labels.host }} recorded {{ $value }} failed "
                         "transfer tests; see the host's report errors."
                     ),
                     "dashboard": "/#/host/{{ $labels.host }}",
                 },
             ),
         )),
)
