"""A GPU's own evidence end to end, on SQLite and PostgreSQL: clocks stored with the samples
and each result labelled with the throttled GPUs it touched (migration 0017); a slow pair on
a power-capped GPU judged "slow, GPU3 power-capped during the test", not degraded, while the
same slowness without the cap is; the GPU throttled in most sweeps degraded on its own;
the host page's clocks and RDMA readiness; the scheduler's RDMA field; the demo's story."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from prometheus_client import CollectorRegistry, generate_latest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from peerwatch.app.alerting.settings import AlertingSettings
from peerwatch.app.analysis.verdict import Verdict
from peerwatch.app.exposition.collector import PeerwatchCollector
from peerwatch.app.exposition.loader import load_snapshot
from peerwatch.app.ingest.rows import ingest
from peerwatch.app.judging.service import AlertingService
from peerwatch.app.judging.sessions import make_sessionmaker
from peerwatch.app.queries.health import host_health
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.clocks_row import clocks_of
from peerwatch.app.store.db import make_engine
from peerwatch.app.store.tables.alerts import Alert
from peerwatch.app.store.tables.history import GpuSample, Measurement, MeasurementKey
from peerwatch.probes.clocks import GpuClocks
from peerwatch.probes.report import CounterSample, Report, ReportKind, TestName
from peerwatch.probes.sim.driver_faults import GpuRecoveryAction
from peerwatch.probes.sim.faults import AcsRedirect, PeermemMissing, ThrottledGpu
from peerwatch.probes.sim.simulated import SimulatedFabric
from peerwatch.probes.sweep import SweepOptions, build_report
from tests.app.conftest import probe_headers
from tests.app.factory import T0, expected_value, sweep
from tests.app.metrics_helpers import promtool_check, value

FULL = expected_value(TestName.CE_WRITE)


@pytest.fixture
def sessions(settings: Settings) -> sessionmaker[Session]:
    return make_sessionmaker(make_engine(settings))


def with_clocks(report: Report, capped: int | None, n: int = 4) -> Report:
    """The report with clocks samples before and after: GPU `capped` at its power cap."""
    def one(g: int) -> GpuClocks:
        if g == capped:
            return GpuClocks(gpu=g, reasons=0x4, power_mw=449_000, power_limit_mw=450_000,
                             sm_clock_mhz=1386, sm_clock_max_mhz=1980)
        return GpuClocks(gpu=g, reasons=0x1, power_mw=78_000, power_limit_mw=700_000)
    samples = [CounterSample(at=at, clocks=[one(g) for g in range(n)])
               for at in (report.started_at, report.finished_at)]
    return report.model_copy(update={"counters": samples})


def server_metrics(snapshot: Any) -> str:
    registry = CollectorRegistry()
    registry.register(PeerwatchCollector(lambda gpus: snapshot, AlertingSettings()))
    return generate_latest(registry).decode()


def firing(sessions: sessionmaker[Session]) -> set[tuple[str, str, str]]:
    """(rule, gpu, peer_gpu) of every pending or firing alert."""
    with sessions() as s:
        rows = s.execute(select(Alert.rule, Alert.labels).where(
            Alert.state.in_(("pending", "firing")))).all()
    return {(rule, labels.get("gpu", ""), labels.get("peer_gpu", "")) for rule, labels in rows}


def run(sessions: sessionmaker[Session], settings: Settings, capped: int | None) -> Any:
    """Six healthy sweeps, then eight with GPU3's pairs at 0.6 (GPU3 capped or not)."""
    service = AlertingService(sessions, settings, AlertingSettings())
    at = T0
    for i in range(14):
        at = T0 + timedelta(minutes=10 * i)
        slow = i >= 6

        def value(s: int, d: int, t: TestName, slow: bool = slow) -> float:
            return FULL * (0.6 if slow and 3 in (s, d) else 0.98)
        report = with_clocks(sweep(n=4, at=at, value=value), capped if slow else None)
        with sessions() as s:
            ingest(s, report, settings, at)
        service.evaluate_host("node-a", at + timedelta(seconds=5))
    with sessions() as s:
        return host_health(s, settings, "node-a")


def test_a_power_capped_gpu_explains_its_slow_pairs(sessions: sessionmaker[Session],
                                                    settings: Settings) -> None:
    health = run(sessions, settings, capped=3)
    slow = health.tests[(3, 0, TestName.CE_WRITE)]
    assert slow.verdict is Verdict.UNKNOWN
    assert slow.reason.startswith("slow, GPU3 power-capped during the test")
    assert health.tests[(0, 1, TestName.CE_WRITE)].verdict is Verdict.HEALTHY
    pairs = {(p.src, p.dst): p for p in health.judgement.pairs}
    assert pairs[(3, 0)].verdict is not Verdict.DEGRADED
    gpu3 = next(g for g in health.gpus if g.gpu == 3)
    assert gpu3.verdict is Verdict.DEGRADED
    assert gpu3.reason.startswith("GPU3 power-capped in 6 of its last 6 sweeps")
    assert "449 of 450 W" in gpu3.reason and "action:" in gpu3.reason
    assert next(g for g in health.gpus if g.gpu == 0).verdict is Verdict.HEALTHY
    with sessions() as s:
        labels = dict(s.execute(select(MeasurementKey.src * 10 + MeasurementKey.dst,
                                       Measurement.throttle)
                                .join(MeasurementKey, MeasurementKey.id == Measurement.key_id)
                                .where(Measurement.measured_at == T0 + timedelta(minutes=130))
                                ).all())
        assert labels[30] == "GPU3 power-capped" and labels[3] == "GPU3 power-capped"
        assert labels[1] is None
        row = s.scalars(select(GpuSample).where(GpuSample.gpu == 3)
                        .order_by(GpuSample.at.desc()).limit(1)).one()
        assert (row.clock_reasons, row.throttle) == (0x4, "power")
        assert isinstance(row.clocks, list)  # stored as a list (0033), read by name
        assert (clocks_of(row.clocks) or {})["power_limit_mw"] == 450_000
    with sessions() as s:
        text = server_metrics(load_snapshot(s))
    assert promtool_check(text) == ""
    assert value(text, "peerwatch_gpu_throttle", host="node-a", gpu="3", kind="power") == 1
    assert value(text, "peerwatch_gpu_throttle", host="node-a", gpu="0", kind="power") is None
    alerts = firing(sessions)
    assert ("GPUThrottled", "3", "") in alerts  # one page, for the GPU
    assert not [a for a in alerts if a[0] == "P2PBandwidthDegraded"]


def test_the_pair_series_lists_the_throttled_samples(client: TestClient) -> None:
    for i in range(3):
        at = T0 + timedelta(minutes=10 * i)
        _post(client, with_clocks(sweep(n=4, at=at), 3 if i == 2 else None))
    series = client.get("/api/v1/hosts/node-a/series",
                        params={"src": 3, "dst": 0, "test": "ce_write", "since": T0.isoformat(),
                                "until": (T0 + timedelta(hours=1)).isoformat()}).json()
    assert [(p["at"][:16], p["throttle"]) for p in series["throttled"]] == [
        ((T0 + timedelta(minutes=20)).isoformat()[:16], "GPU3 power-capped")]
    other = client.get("/api/v1/hosts/node-a/series",
                       params={"src": 0, "dst": 1, "test": "ce_write", "since": T0.isoformat(),
                               "until": (T0 + timedelta(hours=1)).isoformat()}).json()
    assert other["throttled"] == []


def test_the_same_slowness_without_a_cap_is_degraded(sessions: sessionmaker[Session],
                                                     settings: Settings) -> None:
    health = run(sessions, settings, capped=None)
    assert health.tests[(3, 0, TestName.CE_WRITE)].verdict is Verdict.DEGRADED
    assert "GPU3->GPU0 ce_write" in health.tests[(3, 0, TestName.CE_WRITE)].reason
    assert all("power-capped" not in g.reason for g in health.gpus)
    alerts = firing(sessions)
    # GPU3 is slow with every peer: the fabric fault is the GPU's (by attribution),
    # one GPUPeerCopiesSlow page rather than a pair alert per peer
    assert ("GPUPeerCopiesSlow", "3", "") in alerts
    assert not [a for a in alerts if a[0] == "GPUThrottled"]


def _post(client: TestClient, report: Report) -> None:
    r = client.post("/api/v1/reports", content=report.model_dump_json(),
                    headers={**probe_headers(), "Content-Type": "application/json"})
    assert r.status_code == 201, r.text


def test_host_page_and_scheduler_show_clocks_and_rdma(client: TestClient) -> None:
    opts = SweepOptions(tests=(TestName.CE_WRITE,))
    fab = SimulatedFabric("hgx8", seed=3, hostname="hgx-a", faults=[
        ThrottledGpu(gpu=3), AcsRedirect(bridge="0000:16:00.0", gpus=(0, 1))])
    _post(client, build_report(fab, options=opts))
    _post(client, build_report(SimulatedFabric("hgx8", seed=4, hostname="hgx-b",
                                               faults=[PeermemMissing()]), options=opts))
    gpus = client.get("/api/v1/hosts/hgx-a").json()["gpus"]
    c3, c2 = gpus[3]["clocks"], gpus[2]["clocks"]
    assert c3["reasons"] == ["sw_power_cap"] and c3["label"] == "power-capped"
    assert c3["power_limit_w"] == 450 and c3["throttle"] == ["power"]
    assert c2["reasons"] == ["gpu_idle"] and c2["label"] is None
    assert gpus[0]["rdma_readiness"]["readiness"] == "poor"
    assert "ACS redirect on 0000:16:00.0" in gpus[0]["rdma_readiness"]["reason"]
    assert gpus[5]["rdma_readiness"]["readiness"] == "ready"
    answer = client.get("/api/v1/scheduler/hosts", params={"min_healthy_gpus": 1}).json()
    by_host = {h["host"]: h for h in answer["hosts"]}
    rdma_b = {r["gpu"]: r["readiness"] for r in by_host["hgx-b"]["rdma"]}
    assert set(rdma_b.values()) == {"not_ready"}
    ready_only = client.get("/api/v1/scheduler/hosts",
                            params={"min_healthy_gpus": 1, "rdma_ready": True}).json()
    assert "hgx-b" in ready_only["left_out"]
    assert "ready for GPUDirect RDMA" in ready_only["left_out"]["hgx-b"]
    kept = {h["host"]: h for h in ready_only["hosts"]}["hgx-a"]
    assert 0 not in kept["healthy_gpus"] and 1 not in kept["healthy_gpus"]


def test_the_demo_has_a_power_capped_gpu_acs_and_no_peermem() -> None:
    from peerwatch.app.demo.fleet import plan_fleet
    from peerwatch.app.demo.scenario import default_scenario
    scenario = default_scenario(plan_fleet(12))
    assert ThrottledGpu(gpu=2, reason="power", factor=0.7) in scenario.faults_at("mesh4-03", 90)
    assert AcsRedirect(bridge="0000:06:00.0", gpus=(0, 1)) in scenario.faults_at("mesh4-03", -7e4)
    assert PeermemMissing() in scenario.faults_at("mesh4-02", 0)
    assert "power-capped" in "\n".join(scenario.describe())


def test_scheduler_rdma_follows_the_newest_inventory(client: TestClient) -> None:
    """`/scheduler/hosts` judges each GPU's stored RDMA facts once per distinct facts (a
    memo): the newest inventory's facts are what it answers from, never a remembered read."""
    opts = SweepOptions(tests=(TestName.CE_WRITE,))
    at = datetime.now(UTC) - timedelta(minutes=5)

    def rdma_ready_left_out(faults: list[Any], when: datetime) -> bool:
        fab = SimulatedFabric("hgx8", seed=4, hostname="hgx-c", faults=faults)
        _post(client, build_report(fab, options=opts, now=lambda: when))
        answer = client.get("/api/v1/scheduler/hosts",
                            params={"min_healthy_gpus": 1, "rdma_ready": True}).json()
        return "hgx-c" in answer["left_out"]

    assert rdma_ready_left_out([PeermemMissing()], at)
    assert not rdma_ready_left_out([], at + timedelta(minutes=1))  # nvidia_peermem loaded
    assert rdma_ready_left_out([PeermemMissing()], at + timedelta(minutes=2))  # and gone


def test_host_page_shows_what_the_driver_says(client: TestClient) -> None:
    """The host answer carries each GPU's driver reads; the health answer its verdict with
    the driver's words and action (the host page's "Why" and "Driver says" columns)."""
    fab = SimulatedFabric("h200x2", hostname="drv-page",
                          faults=[GpuRecoveryAction(gpu=1, action="drain_p2p")])
    _post(client, build_report(fab, ReportKind.INVENTORY))
    gpus = client.get("/api/v1/hosts/drv-page").json()["gpus"]
    assert gpus[1]["driver"]["recovery_action"] == "drain_p2p"
    assert gpus[0]["driver"]["recovery_action"] == "none"
    assert "retired_pages" in gpus[0]["driver"]["unread"]
    imex = client.get("/api/v1/hosts/drv-page").json()["imex"]
    assert imex["present"] is False and imex["how"].startswith("not present")
    health = client.get("/api/v1/hosts/drv-page/health").json()
    gpu1 = {g["gpu"]: g for g in health["gpus"]}[1]
    assert gpu1["verdict"] == "down" and "DRAIN_P2P" in gpu1["reason"]
def test_gpu_series_are_the_stored_clocks_samples(client: TestClient) -> None:
    """GET /hosts/{host}/gpus/series: per GPU, the SM clock, power and temperature of each
    clocks sample the sweeps carried (the host page draws them beside the bandwidth)."""
    opts = SweepOptions(tests=(TestName.CE_WRITE,))
    fab = SimulatedFabric("hgx8", seed=3, hostname="hgx-a", faults=[ThrottledGpu(gpu=3)])
    report = build_report(fab, options=opts)
    _post(client, report)
    answer = client.get("/api/v1/hosts/hgx-a/gpus/series")
    assert answer.status_code == 200, answer.text
    body = answer.json()
    sent = {c.gpu: c for sample in report.counters for c in sample.clocks}
    assert [g["gpu"] for g in body["gpus"]] == sorted(sent)
    capped = body["gpus"][3]
    samples = [c for s in report.counters for c in s.clocks if c.gpu == 3]
    assert len(capped["at"]) == len(samples) > 0
    assert capped["power_w"] == [round(c.power_mw / 1000, 1) for c in samples]
    assert capped["sm_clock_mhz"] == [c.sm_clock_mhz for c in samples]
    assert capped["temperature_c"] == [c.temperature_c for c in samples]
    assert capped["power_limit_w"] == 450
    assert client.get("/api/v1/hosts/nope/gpus/series").status_code == 404
    old = client.get("/api/v1/hosts/hgx-a/gpus/series",
                     params={"until": "2000-01-01T00:00:00Z"}).json()
    assert old["gpus"] == []
