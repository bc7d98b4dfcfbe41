"""End to end on the simulated fabric: reports built by the probe's own sweep on the `hgx8`
preset go through the ingest endpoint, and the API's verdicts find the injected faults."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime, timedelta

import pytest
from fastapi.testclient import TestClient

from peerwatch.app.main import create_app
from peerwatch.app.runtime.config import Settings
from peerwatch.probes.report import TestName
from peerwatch.probes.sim.faults import BandwidthFactor, LinksDown
from peerwatch.probes.sim.simulated import SimulatedFabric
from peerwatch.probes.sweep import SweepOptions, build_report
from tests.app.conftest import probe_headers
from tests.app.factory import T0
from tests.app.judged_client import JudgedClient

SWEEP_EVERY = timedelta(minutes=10)


class FakeTime:
    """One clock for the fabric (monotonic seconds) and the report (UTC datetimes)."""

    def __init__(self, start: datetime) -> None:
        self.now = start
        self.start = start

    def utc(self) -> datetime:
        return self.now

    def monotonic(self) -> float:
        return (self.now - self.start).total_seconds()


@pytest.fixture
def api(settings: Settings) -> Iterator[TestClient]:
    fresh = settings.model_copy(update={"stale_after_s": 30 * 86_400.0})
    with JudgedClient(create_app(fresh)) as client:
        yield client


def run_sweeps(client: TestClient, fabric: SimulatedFabric, clock: FakeTime, count: int,
               step: Callable[[], None] | None = None) -> None:
    options = SweepOptions(tests=(TestName.CE_WRITE,), timeout_s=None)
    for _ in range(count):
        report = build_report(fabric, options=options, now=clock.utc)
        r = client.post("/api/v1/reports", content=report.model_dump_json(),
                        headers={**probe_headers(), "Content-Type": "application/json"})
        assert r.status_code == 201, r.text
        clock.now += SWEEP_EVERY


def test_hgx8_with_cut_links_and_a_slow_pair(api: TestClient) -> None:
    clock = FakeTime(T0)
    fabric = SimulatedFabric("hgx8", seed=3, clock=clock.monotonic, hostname="sim-hgx8")
    run_sweeps(api, fabric, clock, 6)
    healthy = api.get("/api/v1/hosts/sim-hgx8/health").json()
    assert healthy["verdict"] == "healthy", healthy["reason"]

    fabric.inject(LinksDown(gpu=3, count=18), BandwidthFactor(src=1, dst=2, factor=0.5))
    run_sweeps(api, fabric, clock, 3)
    health = api.get("/api/v1/hosts/sim-hgx8/health").json()
    gpus = {g["gpu"]: g for g in health["gpus"]}
    assert gpus[3]["verdict"] == "down"
    assert "all 18 NVLinks down" in gpus[3]["reason"]
    # the slow 1<->2 pair is a pair fault: both its ends healthy (P2PBandwidth-
    # Degraded names the pair, the scheduler keeps them apart); GPU3's pairs are explained
    # by it
    assert [g for g, j in gpus.items() if j["verdict"] == "healthy"] == [0, 1, 2, 4, 5, 6, 7]
    assert "kept apart from GPU2 (a pair fault" in gpus[1]["reason"]
    offered = api.get("/api/v1/scheduler/hosts").json()["hosts"][0]
    assert offered["apart"] == [[1, 2]]
    assert offered["cuda_visible_devices"] == "0,1,4,5,6,7"
    pairs = {(p["src"], p["dst"]): p for p in health["pairs"]}
    assert pairs[(1, 2)]["verdict"] == "degraded"
    assert "GPU1->GPU2 ce_write" in pairs[(1, 2)]["reason"]
    assert "for 20 min" in pairs[(1, 2)]["reason"]
    assert pairs[(0, 1)]["verdict"] == "healthy"

    summary = api.get("/api/v1/hosts").json()["hosts"][0]
    assert (summary["verdict"], summary["gpus_healthy"], summary["gpus_total"]) == \
        ("degraded", 7, 8)
    matrix = api.get("/api/v1/hosts/sim-hgx8/matrix").json()
    assert len(matrix["cells"]) == 56
    topo = api.get("/api/v1/hosts/sim-hgx8/topology").json()
    edge = next(e for e in topo["edges"] if e["id"] == "gpu3-nvswitch")
    assert (edge["width"], edge["verdict"]) == (0, "down")
