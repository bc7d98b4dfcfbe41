"""The server collector's exposition: names, units, labels, promtool-clean, detail levels."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from peerwatch.app.alerting.settings import AlertingSettings, MetricsDetail
from peerwatch.app.exposition.collector import PeerwatchCollector
from peerwatch.app.exposition.snapshot import AlertCount, FleetSnapshot, GpuVerdict, HostFacts
from tests.app.metrics_helpers import names, promtool_check, series, value

AT = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)


def _snapshot() -> FleetSnapshot:
    """A degraded 2-GPU host whose GPU1 fell off the bus, with a 3 s clock skew, and a host
    not judged yet."""
    return FleetSnapshot(
        hosts=[HostFacts(host="h200-a", fabric="nvml", driver_version="580.159.04",
                         last_received_at=AT, last_sweep_at=AT, clock_skew_s=3.0,
                         verdict="degraded", verdict_since=AT, stale=False, gpus_total=2,
                         gpus_healthy=1, worst_ratio=0.5),
               HostFacts(host="new-b", fabric="simulated:hgx8", last_received_at=AT)],
        gpus=[GpuVerdict("h200-a", 0, "healthy", True), GpuVerdict("h200-a", 1, "down", False)],
        alerts=[AlertCount(alertname="NVLinkDown", state="firing", severity="critical",
                           host="h200-a", count=1)],
    )


def _expose(snapshot: FleetSnapshot, **settings: object) -> str:
    registry = CollectorRegistry()
    collector = PeerwatchCollector(
        lambda gpus: snapshot if gpus else FleetSnapshot(snapshot.hosts, [], snapshot.alerts),
        AlertingSettings(**settings))
    registry.register(collector)
    return generate_latest(registry).decode()


def test_exposition_passes_promtool() -> None:
    assert promtool_check(_expose(_snapshot())) == ""


def test_promtool_check_can_fail() -> None:
    assert promtool_check("# TYPE foo_total gauge\nfoo_total 1\n") != ""


def test_verdicts_staleness_and_skew_in_base_units() -> None:
    text = _expose(_snapshot())
    assert value(text, "peerwatch_host_verdict", host="h200-a", verdict="degraded") == 1
    assert value(text, "peerwatch_host_verdict", host="h200-a", verdict="healthy") is None
    assert value(text, "peerwatch_gpu_verdict", host="h200-a", gpu="1", verdict="down") == 1
    assert value(text, "peerwatch_gpu_present", host="h200-a", gpu="1") == 0
    assert value(text, "peerwatch_gpu_verdict", host="h200-a", gpu="0", verdict="healthy") == 1
    assert value(text, "peerwatch_probe_last_received_timestamp_seconds",
                 host="h200-a") == AT.timestamp()
    assert value(text, "peerwatch_probe_clock_skew_seconds", host="h200-a") == 3.0
    assert value(text, "peerwatch_host_stale", host="h200-a") == 0
    assert value(text, "peerwatch_host_gpus_healthy", host="h200-a") == 1
    assert value(text, "peerwatch_host_p2p_bandwidth_ratio_min", host="h200-a") == 0.5
    assert value(text, "peerwatch_alerts", alertname="NVLinkDown", state="firing",
                 severity="critical", host="h200-a") == 1


def test_a_host_not_judged_yet_shows_identity_and_staleness_only() -> None:
    text = _expose(_snapshot())
    mine = {line.split("{")[0] for line in series(text) if 'host="new-b"' in line}
    assert mine == {"peerwatch_host_info", "peerwatch_probe_last_received_timestamp_seconds"}


def test_no_per_link_or_per_pair_series() -> None:
    assert not any(n.startswith(("peerwatch_p2p_", "peerwatch_nvlink_", "peerwatch_pcie_"))
                   for n in names(_expose(_snapshot())))


def test_host_detail_drops_gpu_verdicts() -> None:
    full = names(_expose(_snapshot()))
    host = names(_expose(_snapshot(), metrics_detail=MetricsDetail.HOST))
    assert full - host == {"peerwatch_gpu_verdict", "peerwatch_gpu_present"}


def test_old_pair_detail_reads_as_gpu_and_says_why(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        assert AlertingSettings(metrics_detail="pair").metrics_detail is MetricsDetail.GPU
    assert "peerwatch probe --metrics-port" in caplog.text


def test_old_metrics_tests_setting_is_named_as_moved(monkeypatch: pytest.MonkeyPatch,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("PEERWATCH_METRICS_TESTS", "ce_write")
    with caplog.at_level(logging.WARNING):
        AlertingSettings()
    assert "PEERWATCH_PROBE_METRICS_TESTS" in caplog.text
