"""`/metrics`' pair faults: one series per unordered pair the server judged at fault as a
pair (`app/analysis/pair_faults.py`), what PromQL's PairCopiesFailing reads.

`peerwatch_pair_fault{host, gpu, peer_gpu, kind}` is 1, with `gpu` < `peer_gpu` and `kind`
copies_fail, slow or p2p_lost; only pairs at fault have a series (a handful), read from the
non-healthy stored pair rows, whose facts carry the kind (`judging/judge.py`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from prometheus_client.core import GaugeMetricFamily, Metric
from sqlalchemy import select
from sqlalchemy.orm import Session

from peerwatch.app.analysis.pair_faults import stored_faults
from peerwatch.app.store.tables.inventory import Host
from peerwatch.app.store.tables.judged import JudgedPair


@dataclass(frozen=True)
class PairFaultRow:
    host: str
    gpu: int  # the lower index of the pair
    peer_gpu: int
    kind: str


BadPairRow = tuple[str, int, int, dict | None]  # host, src, dst, the row's facts


def bad_pair_rows(session: Session) -> list[BadPairRow]:
    """Every non-healthy judged pair row, by host and pair: read once per scrape for both
    the pair faults and the held pair pages (`metrics_holds.py`)."""
    return [(host, src, dst, facts) for host, src, dst, facts in session.execute(
        select(Host.name, JudgedPair.src, JudgedPair.dst, JudgedPair.facts)
        .join(Host, Host.id == JudgedPair.host_id)
        .where(JudgedPair.verdict != "healthy")
        .order_by(Host.name, JudgedPair.src, JudgedPair.dst))]


def pair_faults_of(bad_rows: Iterable[BadPairRow]) -> list[PairFaultRow]:
    rows: dict[str, list[tuple[int, int, dict | None]]] = {}
    for host, src, dst, facts in bad_rows:
        rows.setdefault(host, []).append((src, dst, facts))
    return [PairFaultRow(host, a, b, kind) for host, found in rows.items()
            for (a, b), kind in sorted(stored_faults(found).items())]


def pair_fault_family(faults: Iterable[PairFaultRow]) -> Metric:
    family = GaugeMetricFamily(
        "peerwatch_pair_fault", "1 for each unordered pair (gpu < peer_gpu) the server judged "
        "at fault as a pair: copies failing (copies_fail) or slow (slow) between two GPUs "
        "whose other pairs work, or P2P lost between them (p2p_lost).",
        labels=["host", "gpu", "peer_gpu", "kind"])
    for f in faults:
        family.add_metric([f.host, str(f.gpu), str(f.peer_gpu), f.kind], 1)
    return family


@dataclass(frozen=True)
class UnjudgedPair:
    host: str
    gpu: int
    peer_gpu: int
    cause: str


def unjudged_of(bad_rows: Iterable[BadPairRow]) -> list[UnjudgedPair]:
    """Ordered pairs unknown because a test was confounded (a throttled GPU): the rows'
    facts say `unjudged` (`analysis/attribution.pair_facts`)."""
    return [UnjudgedPair(host, src, dst, str(cause)) for host, src, dst, facts in bad_rows
            if (cause := (facts or {}).get("unjudged"))]


def unjudged_family(pairs: Iterable[UnjudgedPair]) -> Metric:
    family = GaugeMetricFamily(
        "peerwatch_pair_unjudged", "1 for each ordered pair whose verdict is unknown because "
        "a test of it ran while one end was throttled (cause throttle): /health's answer.",
        labels=["host", "gpu", "peer_gpu", "cause"])
    for p in pairs:
        family.add_metric([p.host, str(p.gpu), str(p.peer_gpu), p.cause], 1)
    return family
