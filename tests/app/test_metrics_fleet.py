"""`GET /metrics` for a simulated HGX board: promtool-clean, and the series count per host
that docs/alerts.md gives as a formula, for each cardinality setting."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.alerting.settings import AlertingSettings, MetricsDetail
from app.config import Settings
from app.main import create_app
from app.services.ingest import ingest
from probes.report import BANDWIDTH_TESTS, TestName
from probes.simulated import SimulatedFabric
from probes.sweep import build_report
from tests.app.metrics_helpers import names, promtool_check, series, value

GPUS, LINKS_PER_GPU = 8, 18
PAIRS = GPUS * (GPUS - 1)


def per_host(tests: set[TestName], detail: MetricsDetail) -> int:
    """The formula of docs/alerts.md, "Series per host"."""
    bandwidth = len(tests & BANDWIDTH_TESTS)
    host = 9 + 5 + 7 + bandwidth  # probe, aggregates, counter sums, worst ratio per test
    gpu = GPUS * 7  # NVLink ports/active, PCIe gen/width now/max, PCIe replays
    link = GPUS * LINKS_PER_GPU * 8  # up, 5 error counters, tx/rx bytes
    pair = PAIRS * (2 + 5 * bandwidth + 4 * (TestName.LATENCY in tests))
    return host + (gpu if detail is not MetricsDetail.HOST else 0) + (
        link + pair if detail is MetricsDetail.PAIR else 0)


@pytest.fixture(scope="module")
def hgx8_settings(tmp_path_factory: pytest.TempPathFactory, sqlite_template: Path) -> Settings:
    """One full default sweep of a healthy simulated hgx8 host (baselines from 1 sample)."""
    path = tmp_path_factory.mktemp("metrics") / "peerwatch.db"
    shutil.copy(sqlite_template, path)
    settings = Settings(database_url=f"sqlite:///{path}", baseline_min_samples=1)
    app = create_app(settings)
    report = build_report(SimulatedFabric("hgx8", seed=11, hostname="hgx-01"))
    with app.state.sessionmaker() as session:
        ingest(session, report, settings, report.finished_at)
    app.state.engine.dispose()
    return settings


def scrape(settings: Settings, **alerting: object) -> str:
    app = create_app(settings)
    app.state.alerting_settings = AlertingSettings(alert_eval_interval_s=0, **alerting)
    with TestClient(app) as client:
        r = client.get("/metrics")
    assert r.status_code == 200
    return r.text


@pytest.fixture(scope="module")
def full(hgx8_settings: Settings) -> Iterator[str]:
    yield scrape(hgx8_settings)


def test_hgx8_exposition_passes_promtool(full: str) -> None:
    assert promtool_check(full) == ""


def test_hgx8_series_match_the_documented_formula(full: str) -> None:
    measured = {TestName.CE_WRITE, TestName.CE_READ, TestName.CE_BIDIR, TestName.SM_WRITE,
                TestName.SM_READ, TestName.STAGED, TestName.LATENCY}
    assert len(series(full)) == per_host(measured, MetricsDetail.PAIR) == 3251


@pytest.mark.parametrize("detail", [MetricsDetail.GPU, MetricsDetail.HOST])
def test_detail_levels_cut_series_to_the_formula(hgx8_settings: Settings,
                                                 detail: MetricsDetail) -> None:
    text = scrape(hgx8_settings, metrics_detail=detail)
    measured = {t for t in TestName if t is not TestName.ALLREDUCE}
    assert len(series(text)) == per_host(measured, detail)
    assert promtool_check(text) == ""


def test_tests_subset_cuts_pair_series(hgx8_settings: Settings) -> None:
    text = scrape(hgx8_settings, metrics_tests=[TestName.CE_WRITE, TestName.LATENCY])
    pair_names = {n for n in names(text) if n.startswith("peerwatch_p2p_")}
    tests_seen = {line.split('test="')[1].split('"')[0] for line in series(text)
                  if line.startswith("peerwatch_p2p_") and 'test="' in line}
    assert tests_seen == {"ce_write", "latency"}
    assert "peerwatch_p2p_latency_seconds" in pair_names


def test_values_are_the_latest_sweep_in_base_units(full: str) -> None:
    pair = {"host": "hgx-01", "gpu": "3", "peer_gpu": "5"}
    bw = value(full, "peerwatch_p2p_bandwidth_bytes_per_second", **pair, test="ce_write")
    expected = value(full, "peerwatch_p2p_expected_bandwidth_bytes_per_second", **pair,
                     test="ce_write")
    ratio = value(full, "peerwatch_p2p_bandwidth_ratio", **pair, test="ce_write")
    assert bw is not None and expected is not None and ratio is not None
    assert 300e9 < bw < 500e9  # NV18 on H100/H200-class NVSwitch: ~390 GB/s
    assert ratio == pytest.approx(bw / expected)
    latency = value(full, "peerwatch_p2p_latency_seconds", **pair)
    assert latency is not None and 1e-7 < latency < 1e-5
    assert value(full, "peerwatch_gpu_nvlink_links", host="hgx-01", gpu="3") == 18
    assert value(full, "peerwatch_probe_transfer_errors", host="hgx-01") == 0
    gpu_s = value(full, "peerwatch_probe_sweep_gpu_seconds", host="hgx-01")
    assert gpu_s is not None and gpu_s > 0
