"""`peerwatch_pair_page_held{host,gpu,peer_gpu,why}`: the pairs whose own page waits while
a GPU pattern may still be forming (`app/analysis/pattern_wait.py`), read from the stored
pair facts at scrape time. The PromQL pair rules leave these pairs out (`unless on (host,
gpu, peer_gpu) peerwatch_pair_page_held`), as the server's rules do, so both hold the same
pages for the same time (at most PEERWATCH_PATTERN_WAIT_S). Only non-healthy pair rows are
read: a handful per sick host, none on a healthy fleet.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from prometheus_client.core import GaugeMetricFamily, Metric

from peerwatch.app.analysis.pattern_wait import held_why
from peerwatch.app.exposition.pair_faults import BadPairRow


@dataclass(frozen=True)
class PairHeld:
    host: str
    gpu: int
    peer_gpu: int
    why: str  # "GPU3 pattern forming"


def held_of(rows: Iterable[BadPairRow]) -> list[PairHeld]:
    """The held pairs among the non-healthy pair rows (`bad_pair_rows`, read once a scrape)."""
    return [PairHeld(host, src, dst, held_why(facts or {})) for host, src, dst, facts in rows
            if (facts or {}).get("waits_for")]


def held_families(held: list[PairHeld]) -> Iterator[Metric]:
    family = GaugeMetricFamily(
        "peerwatch_pair_page_held", "1 for an ordered pair whose own page (its pair alert) "
        "waits while a GPU pattern that would explain it may still be forming, at most "
        "PEERWATCH_PATTERN_WAIT_S; `why` names the GPU.", labels=["host", "gpu", "peer_gpu",
                                                                   "why"])
    for h in held:
        family.add_metric([h.host, str(h.gpu), str(h.peer_gpu), h.why], 1)
    yield family
