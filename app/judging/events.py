"""The Xid/SXid events feed the judgement: a fault found by `app/analysis/xid_judge.py`
worsens the verdict of its object, the reason naming the event, its action and the catalog.

Only `fault` findings change a verdict (a link: degraded; a GPU: down), never a single
warning-level event (one Xid 74 is an alert on the link, its verdict unchanged; three in ten
minutes are a link fault). An NVSwitch fault changes no GPU verdict here: which GPUs route
through which switch is not known to the server; its alert is the page.

The warnings and faults are kept in the judged host row's facts (`stored_findings`):
`/metrics` exposes them from there, as judged, and never judges the events again.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, TypeVar

from peerwatch.app.analysis.fabric_health import GpuJudgement, LinkJudgement
from peerwatch.app.analysis.verdict import SEVERITY, Verdict
from peerwatch.app.analysis.xid_judge import EventFinding

J = TypeVar("J", LinkJudgement, GpuJudgement)


def _worse(j: J, verdict: Verdict, reason: str) -> J:
    """`j` at least as bad as `verdict`, the event's reason first (a worse verdict it
    already had stays, the event's reason added)."""
    if SEVERITY[verdict] < SEVERITY[j.verdict]:
        return replace(j, reason=f"{j.reason}; {reason}")
    return replace(j, verdict=verdict, reason=reason if j.verdict is Verdict.HEALTHY
                   else f"{reason}; {j.reason}")


def faults(findings: list[EventFinding]) -> list[EventFinding]:
    return [f for f in findings if f.level == "fault"]


def apply_to_links(links: list[LinkJudgement], findings: list[EventFinding]
                   ) -> list[LinkJudgement]:
    by_link = {(f.gpu, f.link): f for f in faults(findings) if f.entry.object == "link"}
    return [_worse(j, Verdict.DEGRADED, by_link[(j.gpu, j.link)].reason())
            if (j.gpu, j.link) in by_link else j for j in links]


def apply_to_gpus(gpus: list[GpuJudgement], findings: list[EventFinding]
                  ) -> list[GpuJudgement]:
    by_gpu = {f.gpu: f for f in faults(findings) if f.entry.object == "gpu"}
    return [_worse(j, Verdict.DOWN, by_gpu[j.gpu].reason()) if j.gpu in by_gpu else j
            for j in gpus]


def stored_findings(findings: list[EventFinding] | None) -> list[dict[str, Any]]:
    """The warnings and faults as the host row's facts keep them (`facts["events"]`), each
    its catalog entry (kind, code, object), where it is, its level and the events counted."""
    return [{"kind": f.entry.kind, "code": f.entry.code, "object": f.entry.object,
             "gpu": f.gpu, "link": f.link, "switch": f.switch, "level": f.level,
             "count": f.count} for f in findings or () if f.level != "info"]
