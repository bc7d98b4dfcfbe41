"""`/metrics` of the network between hosts, judged at scrape time from the stored host pair
results and the map (the same read as `GET /api/v1/network/pairs`): the pair verdicts the
PromQL twins triangulate (app/alerting/promql_network.py) and the figures beside them."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

from prometheus_client.core import GaugeMetricFamily, Metric
from sqlalchemy.orm import Session

from peerwatch.app.analysis.network import PairVerdict, Place, crosses
from peerwatch.app.queries.network import network_judgement
from peerwatch.app.runtime.config import Settings

SLOW_LABELS = ["host", "peer_host", "leaf", "peer_leaf", "via_spine", "first", "test"]
FIGURE_LABELS = ["host", "peer_host", "test"]


def network_families(session: Session, settings: Settings, now: datetime) -> Iterator[Metric]:
    judgement, places = network_judgement(session, settings, now)
    slow = GaugeMetricFamily(
        "peerwatch_host_pair_slow", "A judged host pair (each direction, per spine group it "
        "crosses): 1 slow, 0 healthy; unjudged pairs have no series.", labels=SLOW_LABELS)
    measured = GaugeMetricFamily(
        "peerwatch_host_pair_bandwidth_bytes_per_second",
        "The newest cross-host figure of a host pair (host < peer_host).", labels=FIGURE_LABELS)
    expected = GaugeMetricFamily(
        "peerwatch_host_pair_expected_bytes_per_second",
        "What the network map expects of a host pair (host < peer_host).", labels=FIGURE_LABELS)
    for v in judgement.pairs:
        if v.verdict == "unknown":
            continue
        for labels in _slow_labels(v, places):
            slow.add_metric(labels, 1.0 if v.slow else 0.0)
        if v.measured is not None:
            measured.add_metric([v.host, v.peer_host, v.test], v.measured)
        if v.expected is not None:
            expected.add_metric([v.host, v.peer_host, v.test], v.expected)
    yield from (slow, measured, expected)


def _slow_labels(v: PairVerdict, places: dict[str, Place]) -> Iterator[list[str]]:
    spines = crosses(places, (v.host, v.peer_host)) or ("",)
    for a, b, first in ((v.host, v.peer_host, "true"), (v.peer_host, v.host, "false")):
        for spine in spines:
            yield [a, b, places[a].leaf, places[b].leaf, spine, first, v.test]
