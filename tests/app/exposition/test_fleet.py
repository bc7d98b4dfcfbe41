"""`GET /metrics` of the real app on SQLite and PostgreSQL: the stored verdicts
(`judged_hosts`, `judged_gpus`, inserted here as the judging code will write them),
staleness by the server's clock, this replica's ingest counters, and the series count per
host that docs/alerts.md gives."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient

from peerwatch.app.alerting.settings import AlertingSettings, MetricsDetail
from peerwatch.app.main import create_app
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.tables.inventory import Gpu, Host
from peerwatch.app.store.tables.judged import JudgedGpu, JudgedHost, JudgedTest
from peerwatch.probes.report import ReportKind, TestName
from peerwatch.probes.sim.simulated import SimulatedFabric
from peerwatch.probes.sweep import build_report
from tests.app.conftest import probe_headers
from tests.app.judged_client import JudgedClient
from tests.app.metrics_helpers import promtool_check, series, value, values

NOW = datetime.now(UTC).replace(microsecond=0)
GPUS = 8
PER_HOST = 10  # info, verdict, since, stale, gpus, healthy, worst ratio, received, sweep, skew
PER_GPU = 2  # verdict, present


def _judged(session, name: str, *, sick_gpu: int | None, stale: bool = False,
            missing_gpu: int | None = None) -> None:
    host = Host(name=name, fabric="simulated:hgx8", first_seen=NOW - timedelta(days=1),
                last_report_at=NOW - timedelta(seconds=4), last_sweep_at=NOW - timedelta(minutes=5),
                last_received_at=NOW, clock_skew_s=4.0)
    session.add(host)
    session.flush()
    bad = "down" if stale else ("degraded" if sick_gpu is not None else "healthy")
    session.add(JudgedHost(host_id=host.id, verdict=bad, reason="test", since=NOW,
                           judged_at=NOW, facts={}, stale=stale, gpus_total=GPUS,
                           gpus_healthy=GPUS - (sick_gpu is not None), worst_src=0, worst_dst=1,
                           worst_test="ce_write", worst_ratio=0.42))
    for g in range(GPUS):
        verdict = "down" if g == missing_gpu else "degraded" if g == sick_gpu else "healthy"
        session.add(JudgedGpu(host_id=host.id, gpu=g, reason="test", since=NOW, judged_at=NOW,
                              facts={}, verdict=verdict))
        session.add(Gpu(host_id=host.id, index=g, uuid=f"GPU-{name}-{g}", name="NVIDIA H200",
                        pci_bus_id=f"0000:{g:02x}:00.0", memory_total_bytes=141 << 30,
                        nvlink_count=18, pcie={}, rdma={}, present=g != missing_gpu,
                        last_seen_at=NOW))


def _app(settings: Settings, **alerting: object) -> TestClient:
    app = create_app(settings)
    app.state.alerting_settings = AlertingSettings(alert_eval_interval_s=0, **alerting)
    return JudgedClient(app)


@pytest.fixture
def client(settings: Settings) -> Iterator[TestClient]:
    with _app(settings) as test_client:
        with test_client.app.state.sessionmaker() as session:  # type: ignore[attr-defined]
            _judged(session, "hgx-01", sick_gpu=3)
            _judged(session, "hgx-02", sick_gpu=None, missing_gpu=6)
            _judged(session, "hgx-03", sick_gpu=None, stale=True)
            session.commit()
        yield test_client


def _scrape(client: TestClient) -> str:
    r = client.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    return r.text


def test_judged_state_is_exported_promtool_clean(client: TestClient) -> None:
    text = _scrape(client)
    assert promtool_check(text) == ""
    assert value(text, "peerwatch_host_verdict", host="hgx-01", verdict="degraded") == 1
    assert value(text, "peerwatch_gpu_verdict", host="hgx-01", gpu="3", verdict="degraded") == 1
    assert value(text, "peerwatch_gpu_verdict", host="hgx-01", gpu="2", verdict="healthy") == 1
    assert value(text, "peerwatch_host_verdict", host="hgx-03", verdict="down") == 1
    assert value(text, "peerwatch_host_stale", host="hgx-03") == 1
    assert value(text, "peerwatch_probe_last_received_timestamp_seconds",
                 host="hgx-02") == NOW.timestamp()
    assert value(text, "peerwatch_probe_clock_skew_seconds", host="hgx-02") == 4.0
    assert value(text, "peerwatch_host_p2p_bandwidth_ratio_min", host="hgx-01") == 0.42
    assert value(text, "peerwatch_gpu_present", host="hgx-02", gpu="6") == 0
    assert value(text, "peerwatch_gpu_present", host="hgx-02", gpu="5") == 1
    assert value(text, "peerwatch_gpu_verdict", host="hgx-02", gpu="6", verdict="down") == 1


def test_series_per_host_match_the_documented_formula(client: TestClient) -> None:
    text = _scrape(client)
    per_host = [line for line in series(text) if 'host="hgx-01"' in line]
    assert len(per_host) == PER_HOST + PER_GPU * GPUS == 26


def test_host_detail_leaves_out_gpu_verdicts(settings: Settings, client: TestClient) -> None:
    with _app(settings, metrics_detail=MetricsDetail.HOST) as other:
        text = _scrape(other)
    assert len([line for line in series(text) if 'host="hgx-01"' in line]) == PER_HOST
    assert "peerwatch_gpu_verdict{" not in text and "peerwatch_gpu_present{" not in text


GDR = "peerwatch_gpu_gdr_expected_bytes_per_second"


def _gdr_host(session, name: str, nics: list[str | None], missing_gpu: int) -> None:
    """A host whose GPUs' gdr_loopback is judged with a basis that names no NIC: the NIC is
    the inventory's (`gpus.rdma`), not the words'."""
    host = Host(name=name, fabric="simulated:hgx8", first_seen=NOW, last_report_at=NOW)
    session.add(host)
    session.flush()
    for g, nic in enumerate(nics):
        session.add(Gpu(host_id=host.id, index=g, uuid=f"GPU-{name}-{g}", name="NVIDIA H200",
                        pci_bus_id=f"0000:{g:02x}:00.0", memory_total_bytes=141 << 30,
                        nvlink_count=18, pcie={}, rdma={"nearest_nic": nic} if nic else {},
                        present=g != missing_gpu, last_seen_at=NOW))
        session.add(JudgedTest(host_id=host.id, test=TestName.GDR_LOOPBACK.value, src=g, dst=g,
                               verdict="healthy", reason="test", since=NOW, judged_at=NOW,
                               facts={}, expected=40e9 + g, latest_contended=False,
                               latest_foreign_bytes=0,
                               expected_basis="the nearest NIC's rate, however it is worded"))


def test_the_gdr_expectation_names_the_nic_the_inventory_names(client: TestClient) -> None:
    """GPU0 and GPU1 name their NICs; GPU2's inventory names none and GPU3 is gone from it:
    those two export nothing (the rule names no NIC for them either)."""
    with client.app.state.sessionmaker() as session:  # type: ignore[attr-defined]
        _gdr_host(session, "gdr-01", ["mlx5_0", "mlx5_3", None, "mlx5_1"], missing_gpu=3)
        session.commit()
    text = _scrape(client)
    exported = {dict(labels)["gpu"]: (dict(labels)["nic"], v)
                for (name, labels), v in values(text).items()
                if name == GDR and dict(labels)["host"] == "gdr-01"}
    assert exported == {"0": ("mlx5_0", 40e9), "1": ("mlx5_3", 40e9 + 1)}
    assert value(text, GDR, host="gdr-01", gpu="1", test="gdr_loopback", nic="mlx5_3") == 40e9 + 1
    assert promtool_check(text) == ""


def test_ingest_counts_every_outcome_and_times_the_stored(client: TestClient) -> None:
    report = build_report(SimulatedFabric("h200x2", seed=3, hostname="ingest-a"),
                          ReportKind.INVENTORY)
    body = report.model_dump_json()
    headers = {**probe_headers(), "Content-Type": "application/json"}
    assert client.post("/api/v1/reports", content=body, headers=headers).status_code == 201
    assert client.post("/api/v1/reports", content=body, headers=headers).status_code == 200
    assert client.post("/api/v1/reports", content=b"{", headers=headers).status_code == 422
    assert client.post("/api/v1/reports", content=body).status_code == 401
    text = _scrape(client)
    assert promtool_check(text) == ""
    counts = {o: value(text, "peerwatch_ingest_reports_total", outcome=o)
              for o in ("stored", "duplicate", "rejected", "unauthorized", "busy", "failed")}
    assert counts == {"stored": 1, "duplicate": 1, "rejected": 1, "unauthorized": 1,
                      "busy": 0, "failed": 0}
    assert value(text, "peerwatch_ingest_duration_seconds_count") == 2
    assert value(text, "peerwatch_ingest_in_progress") == 0
    # the stored report's host shows at once, received by the server's clock
    received = value(text, "peerwatch_probe_last_received_timestamp_seconds", host="ingest-a")
    assert received is not None and abs(received - datetime.now(UTC).timestamp()) < 60
