"""`peerwatch_gpu_all_to_all_*{host,gpu,test}`: each GPU's judged all-to-all (a2a_ce,
a2a_nccl), read from the stored judgements at scrape time: its newest judged figure, what
its topology offers (app/analysis/all_to_all.py) and the ratio of the two. Two rows per GPU
at most, so the cost follows the GPUs as the GPU verdicts do.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from prometheus_client.core import GaugeMetricFamily, Metric
from sqlalchemy import select
from sqlalchemy.orm import Session

from peerwatch.app.store.tables.inventory import Host
from peerwatch.app.store.tables.judged import JudgedTest
from peerwatch.probes.test_kinds import kinds

LABELS = ["host", "gpu", "test"]


@dataclass(frozen=True)
class AllToAllFigure:
    host: str
    gpu: int
    test: str
    value: float | None
    expected: float | None
    ratio: float | None


def all_to_all_tests() -> list[str]:
    return [k.name for k in kinds() if k.expect.model == "all_to_all"]


def load_all_to_all(session: Session) -> list[AllToAllFigure]:
    rows = session.execute(
        select(Host.name, JudgedTest.src, JudgedTest.test, JudgedTest.value,
               JudgedTest.expected, JudgedTest.ratio_expected)
        .join(Host, Host.id == JudgedTest.host_id)
        .where(JudgedTest.test.in_(all_to_all_tests()), JudgedTest.src == JudgedTest.dst)
        .order_by(Host.name, JudgedTest.src, JudgedTest.test))
    return [AllToAllFigure(*r) for r in rows]


def all_to_all_families(figures: Iterable[AllToAllFigure]) -> Iterator[Metric]:
    value = GaugeMetricFamily(
        "peerwatch_gpu_all_to_all_bytes_per_second", "A GPU's newest judged all-to-all "
        "figure: what it sent to its peers per second with every GPU sending to every other "
        "at once (a2a_ce copy engines, a2a_nccl NCCL).", labels=LABELS)
    expected = GaugeMetricFamily(
        "peerwatch_gpu_all_to_all_expected_bytes_per_second", "What the GPU's topology "
        "offers it in an all-to-all (NVSwitch: near its full NVLink bandwidth; PCIe and "
        "meshes: its shared links, split).", labels=LABELS)
    ratio = GaugeMetricFamily(
        "peerwatch_gpu_all_to_all_ratio", "The GPU's all-to-all figure over what its "
        "topology offers (1.0 as expected).", labels=LABELS)
    for f in figures:
        key = [f.host, str(f.gpu), f.test]
        for family, v in ((value, f.value), (expected, f.expected), (ratio, f.ratio)):
            if v is not None:
                family.add_metric(key, v)
    yield from (value, expected, ratio)
