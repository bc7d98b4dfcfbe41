"""The h200x2 preset answers like the real H200 pair did (tests/fixtures/h200x2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from peerwatch.probes.budgets import DEFAULT_BUDGETS
from peerwatch.probes.fabric import TestSpec
from peerwatch.probes.report import (
    GPU_TESTS,
    NIC_TESTS,
    LinkState,
    P2PCap,
    P2PStatus,
    PathLevel,
    RemoteType,
    TestName,
)
from peerwatch.probes.sim.simulated import SimulatedFabric

FIXTURES = Path(__file__).parents[2] / "fixtures" / "h200x2"
NVML = json.loads((FIXTURES / "nvml.json").read_text())
MEASURED = json.loads((FIXTURES / "measured.json").read_text())
NVSWITCH_REMOTE = 2  # nvmlIntNvLinkDeviceType_t: SWITCH


def _fabric() -> SimulatedFabric:
    return SimulatedFabric("h200x2", seed=11)


@pytest.mark.parametrize("dev", NVML["devices"], ids=lambda d: f"gpu{d['index']}")
def test_gpu_identity_matches_the_nvml_dump(dev: dict) -> None:
    info = _fabric().gpu(dev["index"])
    assert (info.name, info.uuid, info.pci_bus_id) == (dev["name"], dev["uuid"],
                                                       dev["pci"]["busId"])
    assert info.memory_total_bytes == dev["mem"]["total"]
    assert (info.pcie.gen_current, info.pcie.gen_max) == tuple(dev["pcie_gen"])
    assert (info.pcie.width_current, info.pcie.width_max) == tuple(dev["pcie_width"])
    assert info.nvlink_count == dev["fields"]["NVML_FI_DEV_NVLINK_LINK_COUNT"]


@pytest.mark.parametrize("dev", NVML["devices"], ids=lambda d: f"gpu{d['index']}")
def test_links_match_the_nvml_dump(dev: dict) -> None:
    real = [link for link in dev["links"] if "errors" in link]  # links >= 18: InvalidArgument
    ports = _fabric().nvlinks(dev["index"])
    assert len(ports) == len(real) == 18
    speed_mbps = dev["fields_per_link"]["NVML_FI_DEV_NVLINK_GET_SPEED"]
    for port, link, mbps in zip(ports, real, speed_mbps, strict=True):
        assert port.state is (LinkState.UP if link["state"] == 1 else LinkState.DOWN)
        assert link["version"] == 6 and port.version == "4.0"
        assert link["remote_type"] == NVSWITCH_REMOTE and port.remote_type is RemoteType.NVSWITCH
        assert port.remote_pci_bus_id is None and port.remote_gpu is None
        assert port.speed_bps == pytest.approx(mbps * 1e6)
    counters = _fabric().link_counters(dev["index"])
    assert [c.crc_data for c in counters] == [
        link["errors"]["NVML_NVLINK_ERROR_DL_CRC_DATA"] for link in real]
    assert all(c.replay == 0 and c.recovery == 0 and c.tx_bytes == 0 for c in counters)


def test_pair_topology_and_p2p_match_nvidia_smi() -> None:
    pair = _fabric().pair(0, 1)
    nvml_p2p = NVML["devices"][0]["p2p"]["1"]
    assert pair.topology == "NV18" and pair.nvlink_width == 18 and pair.via_nvswitch
    assert pair.pcie_path is PathLevel.PHB and NVML["devices"][0]["topo"]["1"] == 30
    for cap, key in [(P2PCap.WRITE, "WRITE"), (P2PCap.NVLINK, "NVLINK"),
                     (P2PCap.ATOMICS, "ATOMICS"), (P2PCap.PCI, "PCI")]:
        code = nvml_p2p[f"NVML_P2P_CAPS_INDEX_{key}"]
        assert pair.p2p[cap] is (P2PStatus.OK if code == 0 else P2PStatus.NOT_SUPPORTED)
    assert pair.p2p[P2PCap.READ] is P2PStatus.OK and pair.can_access_peer


def _value(test: TestName) -> float:
    fab = _fabric()
    return fab.measure(DEFAULT_BUDGETS[test].spec(test, 0, 1, gpus=(0, 1))).value


def test_ce_at_the_default_size_matches_the_cupy_curve() -> None:
    size = DEFAULT_BUDGETS[TestName.CE_WRITE].bytes_per_copy
    measured = MEASURED["cupy_memcpyPeerAsync_GBps_by_bytes"][str(size)] * 1e9
    assert _value(TestName.CE_WRITE) == pytest.approx(measured, rel=0.02)
    assert _value(TestName.CE_READ) == pytest.approx(measured, rel=0.03)
    bidir = MEASURED["nvbandwidth_v0.8"]["device_to_device_bidirectional_memcpy_read_ce_total"]
    assert _value(TestName.CE_BIDIR) == pytest.approx(bidir * 1e9, rel=0.03)


def test_other_tests_match_the_reference_tools() -> None:
    nvb = MEASURED["nvbandwidth_v0.8"]
    assert _value(TestName.SM_WRITE) == pytest.approx(nvb["device_to_device_memcpy_write_sm"] * 1e9,
                                                      rel=0.02)
    assert _value(TestName.SM_READ) == pytest.approx(nvb["device_to_device_memcpy_read_sm"] * 1e9,
                                                     rel=0.02)
    assert _value(TestName.LATENCY) == pytest.approx(
        nvb["device_to_device_latency_sm_ns"] * 1e-9, rel=0.05)
    staged = MEASURED["p2pBandwidthLatencyTest"]["uni_p2p_disabled_GBps"]
    assert _value(TestName.STAGED) == pytest.approx(staged * 1e9, rel=0.03)
    size = DEFAULT_BUDGETS[TestName.ALLREDUCE].bytes_per_copy
    busbw = MEASURED["nccl_allreduce_busbw_GBps_by_bytes"][str(size)]
    assert _value(TestName.ALLREDUCE) == pytest.approx(busbw * 1e9, rel=0.02)


def _spec(test: TestName) -> TestSpec:
    if test in GPU_TESTS:
        return DEFAULT_BUDGETS[test].spec(test, 0)
    return DEFAULT_BUDGETS[test].spec(test, 0, 1, gpus=(0, 1))


def test_default_budgets_cost_at_most_5ms_and_512mib_per_pair_test() -> None:
    fab = _fabric()
    for test in TestName:
        if test in NIC_TESTS:  # no RDMA NIC on this preset (tests/app/alerting/test_nic_health.py)
            continue
        m = fab.measure(_spec(test))
        assert m.gpu_time_s <= 5e-3, test
        assert m.device_memory_bytes <= 512 << 20, test


def test_the_per_gpu_tests_cost_at_most_5ms_together() -> None:
    fab = _fabric()
    assert sum(fab.measure(_spec(t)).gpu_time_s for t in GPU_TESTS) <= 5e-3


@pytest.mark.parametrize(("test", "measured_gbps"), [
    (TestName.H2D, 54.5), (TestName.D2H, 54.7), (TestName.LOCAL, 2047.0)])
def test_per_gpu_tests_match_the_one_h200_at_the_default_budget(test: TestName,
                                                                 measured_gbps: float) -> None:
    """bench/gpu/pcie.py on the lent one-H200 machine (PCIe 5 x16), default budgets."""
    assert _fabric().measure(_spec(test)).value == pytest.approx(measured_gbps * 1e9, rel=0.03)
