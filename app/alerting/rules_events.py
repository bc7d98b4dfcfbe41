"""Alert rules for Xid/SXid events, judged with the catalog (`app/analysis/xid_judge.py`):

    XidFault    critical  an event (or its repeats past the catalog's threshold) makes a
                          GPU, an NVLink or an NVSwitch faulty: one page per object and event
                          number, with the catalog's meaning, action and source
    XidWarning  warning   a warning-level event inside its window, below its threshold
                          (one Xid 74 on a link; a non-fatal SXid): the verdict unchanged

A fault explains the other alerts of its object: pair alerts of its GPU are not raised
(`explains.explained_gpus`) and the page says which related alerts it stands for. A GPU fault on a
GPU missing from the inventory (Xid 79: fallen off the bus) is GPUMissing's page, and an
event on a link that is down now (NVLinkDown, pending or firing), that NVLinkDown paged
within the flap window (it came back after its `for`), or that is flapping
(NVLinkFlapping) is the link-state rules': each names the event, and these rules leave
them out, so one fault pages once. Anything else is these rules' own: a link that logs
Xid 74 while it stays up (a marginal link), and a link that went down once, shorter than
NVLinkDown's `for`, and came back (a single flap: no link-state rule fires, so the Xid it
logged as it dropped warns, on the link, saying it came back; a second drop within the
hour is NVLinkFlapping's). Labels are bounded: host, gpu, link or switch, and xid.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import or_, select

from peerwatch.app.alerting.context import HostContext
from peerwatch.app.alerting.promql import Twin
from peerwatch.app.alerting.rule import Finding, Rule, dashboard_path
from peerwatch.app.alerting.switch_pages import nvlink_domain, switch_explains
from peerwatch.app.analysis.off_bus import fell_off, off_bus_gpus
from peerwatch.app.analysis.verdict import Verdict
from peerwatch.app.analysis.xid_judge import EventFinding
from peerwatch.app.store.tables.alerts import Alert


def _labels(ctx: HostContext, f: EventFinding) -> dict[str, str]:
    labels = {"host": ctx.name, "xid": f"{f.entry.kind}{f.entry.code}"}
    if f.entry.object == "switch":
        labels["switch"] = f.switch or "unknown"
        labels["nvlink_domain"] = nvlink_domain(ctx)
    else:
        labels["gpu"] = str(f.gpu) if f.gpu is not None else "unknown"
        if f.entry.object == "link" and f.link is not None:
            labels["link"] = str(f.link)
    return labels


def _related(ctx: HostContext, f: EventFinding) -> str:
    """Which other alerts this event stands for, in words."""
    if f.entry.object == "switch":
        return switch_explains(ctx)
    pairs = sorted({f"GPU{s}->GPU{d}" for (s, d, _), j in ctx.health.tests.items()
                    if s != d and f.gpu in (s, d) and j.verdict.value != "healthy"})
    link = (f"NVLinkErrorsIncreasing of NVLink {f.link} and "
            if f.entry.object == "link" else "")
    return f"{link}the pair alerts of GPU{f.gpu}" + (f" ({', '.join(pairs)})" if pairs else "")


# A link's down is dated by the judgement that first saw it (the report after the drop);
# its Xid by the probe's clock when logged: the down may be dated a little before the event.
DOWN_BEFORE_EVENT_S = 120.0


def _paged_elsewhere(ctx: HostContext, f: EventFinding) -> bool:
    """A lost GPU is GPUMissing's page; a link down now or flapping the link-state rules'
    (NVLinkDown, NVLinkFlapping): each names the event."""
    if f.entry.object == "gpu":
        return f.gpu in ctx.fabric.missing_gpus or fell_off(f)
    return f.entry.object == "link" and (f.gpu, f.link) in links_paged_by_state(ctx)


def off_bus(ctx: HostContext) -> dict[int, EventFinding]:
    """GPUs whose held Xid 79 says they fell off the bus: GPUMissing's page (`off_bus.py`)."""
    return off_bus_gpus(ctx.events)


def links_paged_by_state(ctx: HostContext) -> set[tuple[int, int]]:
    """Links whose state is a link-state rule's page: down now, up and flapping, or paged by
    NVLinkDown within the flap window (its page named the event; a warning after it
    resolved would be a second alert for one drop)."""
    now = {(j.gpu, j.link) for j in ctx.links if j.verdict is Verdict.DOWN or j.flapping}
    return now | _paged_down(ctx)


def _paged_down(ctx: HostContext) -> set[tuple[int, int]]:
    """Links NVLinkDown fired for, firing still or resolved within the flap window: what
    fired, whatever `for` the deployment set (the PromQL twin reads ALERTS)."""
    since = ctx.now - timedelta(seconds=ctx.settings.link_flap_window_s)
    rows = ctx.session.scalars(select(Alert.labels).where(
        Alert.host == ctx.name, Alert.rule == "NVLinkDown", Alert.fired_at.is_not(None),
        or_(Alert.resolved_at.is_(None), Alert.resolved_at >= since)))
    return {(int(labels["gpu"]), int(labels["link"])) for labels in rows}


def _downs_since(ctx: HostContext, f: EventFinding) -> int:
    """How often the link went down since just before the finding's first event: each
    drop may be what logged it."""
    if f.entry.object != "link" or f.gpu is None or f.link is None:
        return 0
    seen = ctx.health.link_facts.get((f.gpu, f.link), {}).get("downs", [])
    since = f.first_at - timedelta(seconds=DOWN_BEFORE_EVENT_S)
    return sum(1 for at in seen if datetime.fromisoformat(at) >= since)


def _came_back(ctx: HostContext, f: EventFinding) -> str:
    """Words for a link event logged as the link dropped, the link up again."""
    downs = _downs_since(ctx, f)
    if not downs:
        return ""
    times = "once" if downs == 1 else f"{downs}x"
    return (f" NVLink {f.link} went down {times} as the event was logged and is up again: "
            "watch it (NVLinkFlapping pages if it keeps going down).")


def link_events(ctx: HostContext) -> dict[tuple[int, int], str]:
    """(gpu, link) -> the worst event judged on it, in words, for NVLinkDown to name."""
    out: dict[tuple[int, int], str] = {}
    for f in sorted(ctx.events, key=lambda f: f.level != "fault"):
        if f.entry.object == "link" and f.gpu is not None and f.link is not None:
            out.setdefault((f.gpu, f.link), f"{f.entry.label} ({f.entry.name}, {f.count}x)")
    return out


def _finding(ctx: HostContext, f: EventFinding, explains: bool) -> Finding:
    tail = _came_back(ctx, f) + (f" It explains {_related(ctx, f)}." if explains else "")
    return Finding(labels=_labels(ctx, f),
                   summary=f"{f.entry.label} on {f.where} of {ctx.name}: {f.entry.name}",
                   description=f.reason() + "." + tail,
                   dashboard=dashboard_path(ctx.name, gpu=f.gpu), value=float(f.count))


def xid_fault(ctx: HostContext) -> list[Finding]:
    return [_finding(ctx, f, True) for f in ctx.events
            if f.level == "fault" and not _paged_elsewhere(ctx, f)]


def xid_warning(ctx: HostContext) -> list[Finding]:
    return [_finding(ctx, f, False) for f in ctx.events
            if f.level == "warning" and not _paged_elsewhere(ctx, f)]


def event_faulted_links(ctx: HostContext) -> set[tuple[int | None, int | None]]:
    """Links an Xid fault made degraded: their NVLinkErrorsIncreasing is this page's."""
    return {(f.gpu, f.link) for f in ctx.events
            if f.level == "fault" and f.entry.object == "link"}


def event_explained(ctx: HostContext) -> dict[int, str]:
    """GPUs whose event fault explains their pairs' alerts: GPU -> the event."""
    return {f.gpu: f"{f.entry.label} ({f.entry.name})" for f in ctx.events
            if f.level == "fault" and f.gpu is not None and f.entry.object != "switch"}


EVENT_RULES: tuple[Rule, ...] = (
    Rule("XidFault", "critical", 0.0, xid_fault,
         "an Xid/SXid event makes a GPU, an NVLink or an NVSwitch faulty: a critical event (Xid "
         "48, 79, 95, 119, a fatal SXid, a fatal NVLink Xid 144-150) held for 1 h after the "
         "last, or repeats past the catalog's count/window threshold (Xid 74: 3 in 10 min); the "
         "page explains its GPU's pair alerts and its link's `NVLinkErrorsIncreasing` (those are "
         "not raised); a lost GPU stays `GPUMissing`'s page and a link down now, or paged by "
         "`NVLinkDown` within the hour, `NVLinkDown`'s (flapping: `NVLinkFlapping`'s), each "
         "naming the event ([events.md](events.md))",
         label_names="host, gpu, link or switch, xid",
         series=("peerwatch_fabric_event_findings", "peerwatch_gpu_present", "peerwatch_nvlink_up"),
         twins=(
             Twin(
                 note=(
                     "Xid/SXid events the server judged with its catalog "
                     "(app/analysis/xid_catalog.py): a critical event, or repeats past the "
                     "catalog's count/window threshold, make the object (GPU, NVLink, NVSwitch) "
                     "faulty. `max by` pages once across replicas; a GPU missing from the "
                     "inventory is GPUMissing's page, and an Xid on a link down now or flapping "
                     "the link-state rules' (peerwatch:nvlink_paged_by_state): both left out "
                     "(`unless`), as on the server. A link that went down once and came back (a "
                     "flap shorter than NVLinkDown's `for`) is paged by neither: its Xid is "
                     "this page's (or XidWarning's), on the link."
                 ),
                 expr=(
                     "max by (host, gpu, link, switch, xid) "
                     '(peerwatch_fabric_event_findings{level="fault", xid!="xid79"}) > 0\n'
                     "  unless on (host, gpu) (max by (host, gpu) (peerwatch_gpu_present) == 0)\n"
                     "  unless on (host, gpu, link) peerwatch:nvlink_paged_by_state\n"
                 ),
                 annotations={
                     "summary": (
                         "{{ $labels.xid }} on {{ $labels.host }} (gpu {{ $labels.gpu }} link "
                         "{{ $labels.link }} switch {{ $labels.switch }})"
                     ),
                     "description": (
                         "{{ $labels.host }}: {{ $labels.xid }} makes its object faulty "
                         "({{ $value }} event(s)); the host page gives the catalog's meaning, "
                         "action and source."
                     ),
                     "dashboard": "/#/host/{{ $labels.host }}",
                 },
             ),
         )),
    Rule("XidWarning", "warning", 0.0, xid_warning,
         "a warning-level Xid/SXid inside its window, below its threshold (one Xid 74; a "
         "non-fatal SXid); the verdict is unchanged. A single short NVLink flap (down under "
         "`NVLinkDown`'s `for`, then up, its Xid 74 logged) is this warning on the link, saying "
         "it came back, for the event's 10 min: no page; a second drop within the hour is "
         "`NVLinkFlapping`'s",
         label_names="host, gpu, link or switch, xid",
         series=("peerwatch_fabric_event_findings", "peerwatch_gpu_present", "peerwatch_nvlink_up"),
         twins=(
             Twin(
                 expr=(
                     "max by (host, gpu, link, switch, xid) "
                     '(peerwatch_fabric_event_findings{level="warning"}) > 0\n'
                     "  unless on (host, gpu) (max by (host, gpu) (peerwatch_gpu_present) == 0)\n"
                     "  unless on (host, gpu, link) peerwatch:nvlink_paged_by_state\n"
                 ),
                 annotations={
                     "summary": (
                         "{{ $labels.xid }} on {{ $labels.host }} (gpu {{ $labels.gpu }} link "
                         "{{ $labels.link }} switch {{ $labels.switch }})"
                     ),
                     "description": (
                         "{{ $labels.host }}: {{ $labels.xid }} ({{ $value }} event(s)), below "
                         "the catalog's fault threshold: the verdict is unchanged."
                     ),
                     "dashboard": "/#/host/{{ $labels.host }}",
                 },
             ),
         )),
)
