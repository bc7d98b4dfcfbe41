"""`peerwatch_gpu_gdr_expected_bytes_per_second{host,gpu,test,nic}`: what each GPU's
GPUDirect RDMA test (gdr_loopback) is expected to reach, read from the stored judgements at
scrape time: its NIC's line rate (or its PCIe link where slower) x the kind's efficiency
(app/analysis/expected.py `expected_nic`). The NIC is the GPU's nearest one as its
inventory names it (`gpus.rdma`'s `nearest_nic`), as GPUDirectRDMADegraded names it
(app/alerting/rules_gdr.py `nic_of`): read as data, never parsed out of the basis's words.
The agent exports the measurement; the GPUDirectRDMADegraded twin divides the two. One row
per GPU with a NIC, so the cost follows the GPUs: one select for the fleet.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from prometheus_client.core import GaugeMetricFamily, Metric
from sqlalchemy import and_, select
from sqlalchemy.orm import Session

from peerwatch.app.store.tables.inventory import Gpu, Host
from peerwatch.app.store.tables.judged import JudgedTest
from peerwatch.probes.test_kinds import kinds

LABELS = ["host", "gpu", "test", "nic"]


@dataclass(frozen=True)
class GdrExpectation:
    host: str
    gpu: int
    test: str
    nic: str
    expected: float


def nic_tests() -> list[str]:
    return [k.name for k in kinds() if k.expect.model == "nic"]


def load_gdr(session: Session) -> list[GdrExpectation]:
    """Each judged NIC test of a GPU in its host's newest inventory that names its nearest
    NIC (extracted from the stored JSON by the database: no inventory decoded here)."""
    nic = Gpu.rdma["nearest_nic"].as_string()
    rows = session.execute(
        select(Host.name, JudgedTest.src, JudgedTest.test, nic, JudgedTest.expected)
        .join(Host, Host.id == JudgedTest.host_id)
        .join(Gpu, and_(Gpu.host_id == JudgedTest.host_id, Gpu.index == JudgedTest.src,
                        Gpu.present.is_(True)))
        .where(JudgedTest.test.in_(nic_tests()), JudgedTest.src == JudgedTest.dst,
               JudgedTest.expected.is_not(None), nic.is_not(None))
        .order_by(Host.name, JudgedTest.src, JudgedTest.test))
    return [GdrExpectation(host, gpu, test, nic_name, expected)
            for host, gpu, test, nic_name, expected in rows
            if expected is not None and nic_name]


def gdr_families(rows: Iterable[GdrExpectation]) -> Iterator[Metric]:
    expected = GaugeMetricFamily(
        "peerwatch_gpu_gdr_expected_bytes_per_second", "What a GPU's GPUDirect RDMA loopback "
        "(gdr_loopback) is expected to reach through its nearest NIC: the NIC's line rate "
        "(or the GPU's PCIe link where slower) x 0.85.", labels=LABELS)
    for r in rows:
        expected.add_metric([r.host, str(r.gpu), r.test, r.nic], r.expected)
    yield expected
