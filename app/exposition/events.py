"""The /metrics families of Xid/SXid events, loaded with the fleet snapshot:

    peerwatch_xid_events_total{host,gpu,xid}          counter: events stored (a report's
        `count` of repeats included); `gpu` is "" for an SXid, `xid` e.g. "xid74" or
        "sxid12028", numbers outside the catalog as "xid_other"/"sxid_other" so the label
        stays bounded. Retention deleting old reports lowers it: Prometheus reads a reset.
    peerwatch_fabric_event_findings{host,gpu,link,switch,xid,level}  gauge: each (object,
        event) as the host's stored judgement found it (`app/judging/events.py`
        `stored_findings`: the judged host row's facts), level "fault" or "warning", value
        the events counted; a GPU's finding has `link` and `switch` "", a link's `switch` "",
        a switch's `gpu` and `link` "". The PromQL twins of XidFault and XidWarning read it
        (and leave a missing GPU's to GPUMissing, as the server's rules do).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from peerwatch.app.analysis.xid_catalog import CATALOG
from peerwatch.app.store.tables.events import FabricEventRow
from peerwatch.app.store.tables.inventory import Host
from peerwatch.app.store.tables.judged import JudgedHost


@dataclass
class EventSeries:
    totals: list[tuple[str, str, str, float]] = field(default_factory=list)  # host, gpu, xid
    findings: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # stored


def xid_label(kind: str, code: int) -> str:
    return f"{kind}{code}" if (kind, code) in CATALOG else f"{kind}_other"


def load_events(session: Session) -> EventSeries:
    out = EventSeries()
    totals: dict[tuple[str, str, str], float] = defaultdict(float)
    rows = session.execute(
        select(Host.name, FabricEventRow.gpu, FabricEventRow.kind, FabricEventRow.code,
               func.sum(FabricEventRow.count))
        .join(Host, Host.id == FabricEventRow.host_id)
        .group_by(Host.name, FabricEventRow.gpu, FabricEventRow.kind, FabricEventRow.code))
    for host, gpu, kind, code, total in rows:
        totals[(host, "" if gpu is None else str(gpu), xid_label(kind, code))] += total or 0
    out.totals = [(*k, v) for k, v in sorted(totals.items())]
    judged = session.execute(select(Host.name, JudgedHost.facts)
                             .join(JudgedHost, JudgedHost.host_id == Host.id)
                             .order_by(Host.name))
    for host, facts in judged:
        out.findings += [(host, f) for f in (facts or {}).get("events", ())]
    return out


def _where(f: dict[str, Any]) -> list[str]:
    """[gpu, link, switch] labels of a stored finding's object ("" where it names none)."""
    if f["object"] == "switch":
        return ["", "", f["switch"] or ""]
    gpu = "" if f["gpu"] is None else str(f["gpu"])
    link = str(f["link"]) if f["object"] == "link" and f["link"] is not None else ""
    return [gpu, link, ""]


def event_families(series: EventSeries) -> Iterator[Metric]:
    total = CounterMetricFamily("peerwatch_xid_events", "Xid/SXid events stored, per host, "
                                "GPU and event number", labels=["host", "gpu", "xid"])
    for host, gpu, xid, value in series.totals:
        total.add_metric([host, gpu, xid], value)
    yield total
    judged = GaugeMetricFamily("peerwatch_fabric_event_findings", "Xid/SXid events judged "
                               "now with the catalog: level fault or warning, value the "
                               "events counted",
                               labels=["host", "gpu", "link", "switch", "xid", "level"])
    for host, f in series.findings:
        judged.add_metric([host, *_where(f), xid_label(f["kind"], f["code"]), f["level"]],
                          float(f["count"]))
    yield judged
