"""The collector's exposition: names, units, labels, promtool-clean, cardinality knobs."""

from __future__ import annotations

from datetime import UTC, datetime

from prometheus_client import CollectorRegistry, generate_latest

from app.alerting.settings import AlertingSettings, MetricsDetail
from app.metrics import PeerwatchCollector
from app.metrics_snapshot import (
    AlertCount,
    FleetSnapshot,
    GpuFacts,
    HostFacts,
    PairFacts,
    PortFacts,
    ResultFacts,
)
from probes.report import LinkCounters, PcieLink, TestName
from tests.app.metrics_helpers import names, promtool_check, series, value

AT = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)


def _snapshot() -> FleetSnapshot:
    """A 2-GPU host: link 3 of GPU1 down, a contended slow pair, a lifetime CRC count."""
    counters = LinkCounters(gpu=0, link=0, tx_bytes=10 << 30, rx_bytes=5 << 30, replay=0,
                            recovery=0, crc_flit=0, crc_data=1_000_000, ecc_data=18)
    return FleetSnapshot(
        hosts=[HostFacts(host="h200-a", fabric="nvml", driver_version="580.159.04",
                         last_report_at=AT, last_sweep_at=AT, sweep_gpu_time_s=0.4,
                         sweep_wall_time_s=2.5, sweep_device_memory_bytes=1 << 30,
                         transfer_errors=1)],
        gpus=[GpuFacts(host="h200-a", gpu=g, nvlink_ports=18, nvlinks_active=18 - g,
                       pcie=PcieLink(gen_current=5, gen_max=5, width_current=16, width_max=16,
                                     replay_count=0)) for g in (0, 1)],
        ports=[PortFacts(host="h200-a", gpu=0, link=0, up=True, counters=counters),
               PortFacts(host="h200-a", gpu=1, link=3, up=False)],
        pairs=[PairFacts(host="h200-a", src=0, dst=1, nvlink_width=17, p2p_access=True),
               PairFacts(host="h200-a", src=1, dst=0, nvlink_width=17, p2p_access=False)],
        results=[
            ResultFacts(host="h200-a", src=0, dst=1, test=TestName.CE_WRITE, value=3.9e11,
                        expected=3.7e11, baseline=3.95e11),
            ResultFacts(host="h200-a", src=1, dst=0, test=TestName.CE_WRITE, value=1.0e11,
                        expected=3.7e11, contended=True),
            ResultFacts(host="h200-a", src=0, dst=1, test=TestName.LATENCY, value=8.3e-7,
                        expected=8.5e-7),
        ],
        alerts=[AlertCount(alertname="NVLinkDown", state="firing", severity="critical",
                           host="h200-a", count=1)],
    )


def _expose(snapshot: FleetSnapshot, **settings: object) -> str:
    registry = CollectorRegistry()
    registry.register(PeerwatchCollector(lambda: snapshot, AlertingSettings(**settings)))
    return generate_latest(registry).decode()


def test_exposition_passes_promtool() -> None:
    text = _expose(_snapshot())
    assert promtool_check(text) == ""


def test_promtool_check_can_fail() -> None:
    assert promtool_check("# TYPE foo_total gauge\nfoo_total 1\n") != ""


def test_values_are_in_base_units_with_lower_case_labels() -> None:
    text = _expose(_snapshot())
    pair = {"host": "h200-a", "gpu": "0", "peer_gpu": "1"}
    assert value(text, "peerwatch_p2p_bandwidth_bytes_per_second", **pair, test="ce_write") \
        == 3.9e11
    assert value(text, "peerwatch_p2p_latency_seconds", **pair) == 8.3e-7
    assert value(text, "peerwatch_nvlink_up", host="h200-a", gpu="1", link="3") == 0
    assert value(text, "peerwatch_nvlink_crc_data_errors_total", host="h200-a", gpu="0",
                 link="0") == 1_000_000
    assert value(text, "peerwatch_probe_last_report_timestamp_seconds", host="h200-a") \
        == AT.timestamp()
    assert value(text, "peerwatch_alerts", alertname="NVLinkDown", state="firing",
                 severity="critical", host="h200-a") == 1
    assert value(text, "peerwatch_p2p_contended", host="h200-a", gpu="1", peer_gpu="0",
                 test="ce_write") == 1
    assert value(text, "peerwatch_p2p_access", host="h200-a", gpu="1", peer_gpu="0") == 0


def test_worst_ratio_ignores_contended_pairs() -> None:
    text = _expose(_snapshot())
    line = next(s for s in series(text) if s.startswith("peerwatch_host_p2p_bandwidth_ratio_min"))
    assert float(line.split()[-1]) == 3.9e11 / 3.7e11


def test_detail_levels_cut_series() -> None:
    snap = _snapshot()
    full = names(_expose(snap))
    gpu = names(_expose(snap, metrics_detail=MetricsDetail.GPU))
    host = names(_expose(snap, metrics_detail=MetricsDetail.HOST))
    assert host < gpu < full
    assert not any(n.startswith(("peerwatch_p2p_", "peerwatch_nvlink_")) for n in gpu)
    assert not any(n.startswith(("peerwatch_gpu_", "peerwatch_pcie_")) for n in host)
    assert "peerwatch_host_nvlink_crc_data_errors_total" in host
    assert "peerwatch_probe_last_report_timestamp_seconds" in host


def test_tests_setting_limits_pair_series() -> None:
    text = _expose(_snapshot(), metrics_tests=[TestName.LATENCY])
    assert "peerwatch_p2p_latency_seconds{" in text
    assert "peerwatch_p2p_bandwidth_bytes_per_second{" not in text
