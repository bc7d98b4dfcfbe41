"""`/metrics` families of `peerwatch drain`, read from its tables at scrape time:

    peerwatch_drain_actions_total{scheduler,kind,mode}  actions recorded (counter)
    peerwatch_drain_node_out{host,scheduler}            1 per node out by peerwatch (act)
    peerwatch_drain_breaker_open{scheduler}             1 while the breaker is open (act)

Every replica serves the same numbers (they are rows, not process state). The PromQL twins of
DrainBreakerOpen and NodeTakenOutByPeerwatch in deploy/prometheus/peerwatch-rules.yml read
the last two.
"""

from __future__ import annotations

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from peerwatch.app.store.tables.drain import DrainAction, DrainBreaker, DrainMark


def drain_families(session: Session) -> list[Metric]:
    actions = CounterMetricFamily("peerwatch_drain_actions", "Actions peerwatch drain "
                                  "recorded, by scheduler, kind and mode.",
                                  labels=["scheduler", "kind", "mode"])
    for scheduler, kind, mode, count in session.execute(
            select(DrainAction.scheduler, DrainAction.kind, DrainAction.mode, func.count())
            .group_by(DrainAction.scheduler, DrainAction.kind, DrainAction.mode)
            .order_by(DrainAction.scheduler, DrainAction.kind, DrainAction.mode)):
        actions.add_metric([scheduler, kind, mode], float(count))
    out = GaugeMetricFamily("peerwatch_drain_node_out", "1 for each node peerwatch drain "
                            "took out of its scheduler (act mode).", labels=["host", "scheduler"])
    for host, scheduler in session.execute(
            select(DrainMark.host, DrainMark.scheduler).where(DrainMark.applied.is_(True))
            .order_by(DrainMark.host, DrainMark.scheduler)):
        out.add_metric([host, scheduler], 1.0)
    breaker = GaugeMetricFamily("peerwatch_drain_breaker_open", "1 while peerwatch drain's "
                                "breaker is open (act mode): no node is taken out until a "
                                "person resets it.", labels=["scheduler"])
    for scheduler, is_open, mode in session.execute(
            select(DrainBreaker.scheduler, DrainBreaker.open, DrainBreaker.mode)
            .order_by(DrainBreaker.scheduler)):
        breaker.add_metric([scheduler], 1.0 if is_open and mode == "act" else 0.0)
    return [actions, out, breaker]
