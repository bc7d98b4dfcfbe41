"""The GB200 NVL72 compute-tray preset and the rack faults (probes/sim/): what NVML would
report for a tray, the rack's shared cluster UUID, and what each rack fault changes."""

from __future__ import annotations

import pytest

from peerwatch.probes.errors import BadProbeRequest
from peerwatch.probes.fabric import TestSpec
from peerwatch.probes.nvidia.nvml_fabric import decode_health_mask
from peerwatch.probes.report import LinkState, RemoteType, TestName
from peerwatch.probes.sim.faults import (
    CliqueMoved,
    FabricNotCompleted,
    InsufficientNvlinks,
    LinksDown,
    SwitchTrayLost,
)
from peerwatch.probes.sim.presets import load_preset, rack_cluster_uuid
from peerwatch.probes.sim.simulated import SimulatedFabric
from peerwatch.probes.sweep import SweepOptions, build_report


def tray(n: int, rack: str = "rack-a", *faults: object) -> SimulatedFabric:
    return SimulatedFabric("nvl72", seed=n, hostname=f"{rack}-tray{n:02d}", rack=rack,
                           faults=faults)  # type: ignore[arg-type]


def down_links(fab: SimulatedFabric, gpu: int) -> list[int]:
    return [p.link for p in fab.nvlinks(gpu) if p.state is LinkState.DOWN]


def test_a_tray_has_four_gb200_with_18_nvlink5_ports_to_the_switch() -> None:
    fab = tray(1)
    assert fab.gpu_count() == 4
    assert {fab.gpu(g).name for g in range(4)} == {"NVIDIA GB200"}
    for g in range(4):
        ports = fab.nvlinks(g)
        assert len(ports) == 18
        assert {p.version for p in ports} == {"5.0"}
        assert {p.speed_bps for p in ports} == {50e9}  # NVLink 5: 50 GB/s per link, direction
        assert {p.remote_type for p in ports} == {RemoteType.NVSWITCH}
        assert {p.remote_gpu for p in ports} == {None}  # a switch: NVML names no peer
    pair = fab.pair(0, 3)
    assert (pair.topology, pair.nvlink_width, pair.via_nvswitch) == ("NV18", 18, True)


def test_ce_copy_is_modelled_at_the_h200_efficiency_of_900_gbps_raw() -> None:
    fab = tray(1)
    spec = TestSpec(TestName.CE_WRITE, src=0, dst=1, bytes_per_copy=1 << 30, copies=4)
    measured = fab.measure(spec).value
    efficiency = 396.4 / 478.1  # calibration.json: CE on the measured H200 pair
    assert measured == pytest.approx(18 * 50e9 * efficiency, rel=0.03)


def test_all_trays_of_a_rack_share_one_cluster_uuid_and_other_racks_do_not() -> None:
    a = [tray(n, "rack-a") for n in (1, 2, 18)]
    b = tray(1, "rack-b")
    uuids = {f.gpu(g).switch_fabric.cluster_uuid for f in a for g in range(4)}  # type: ignore[union-attr]
    assert uuids == {rack_cluster_uuid("rack-a")}
    assert b.gpu(0).switch_fabric.cluster_uuid == rack_cluster_uuid("rack-b")  # type: ignore[union-attr]
    assert rack_cluster_uuid("rack-a") != rack_cluster_uuid("rack-b")
    default = SimulatedFabric("nvl72").gpu(0).switch_fabric
    assert default is not None and default.cluster_uuid == rack_cluster_uuid("nvl72-a")
    assert (default.state, default.status, default.clique_id, default.health) == (
        "completed", "success", 1, "healthy")


def test_a_lost_switch_tray_takes_its_two_ports_from_every_gpu() -> None:
    fab = tray(3, "rack-a", SwitchTrayLost(tray=4))
    for g in range(4):
        assert down_links(fab, g) == [8, 9]
        info = fab.gpu(g).switch_fabric
        assert info is not None and info.health == "limited_capacity"
        assert decode_health_mask(info.health_mask or 0) == ["degraded_bandwidth"]
        assert info.health_issues == ["degraded_bandwidth"]
    assert fab.pair(1, 2).nvlink_width == 16
    fab.clear()
    assert down_links(fab, 0) == [] and fab.gpu(0).switch_fabric.health == "healthy"  # type: ignore[union-attr]


def test_insufficient_nvlinks_downs_ports_and_says_so_in_the_mask() -> None:
    fab = tray(7, "rack-a", InsufficientNvlinks(gpu=2, links_down=10))
    assert len(down_links(fab, 2)) == 10 and down_links(fab, 1) == []
    info = fab.gpu(2).switch_fabric
    assert info is not None and info.health == "unhealthy"
    assert decode_health_mask(info.health_mask or 0) == [
        "incorrect_configuration:insufficient_nvlinks"]
    assert info.health_issues == decode_health_mask(info.health_mask or 0)
    assert fab.gpu(1).switch_fabric.health == "healthy"  # type: ignore[union-attr]
    assert fab.pair(2, 0).nvlink_width == 8


def test_both_faults_keep_the_worse_health_and_both_issues() -> None:
    fab = tray(7, "rack-a", SwitchTrayLost(tray=0), InsufficientNvlinks(gpu=0, links_down=4))
    info = fab.gpu(0).switch_fabric
    assert info is not None and info.health == "unhealthy"
    assert set(decode_health_mask(info.health_mask or 0)) == set(info.health_issues) == {
        "degraded_bandwidth", "incorrect_configuration:insufficient_nvlinks"}
    assert down_links(fab, 0) == [0, 1, 14, 15, 16, 17]


def test_a_moved_tray_reports_its_clique_and_keeps_the_rack_uuid() -> None:
    fab = tray(12, "rack-a", CliqueMoved(clique_id=2))
    for g in range(4):
        info = fab.gpu(g).switch_fabric
        assert info is not None and info.clique_id == 2
        assert info.cluster_uuid == rack_cluster_uuid("rack-a")


def test_fabric_stuck_in_progress_on_a_tray() -> None:
    fab = tray(15, "rack-a", FabricNotCompleted(state="in_progress"))
    assert {fab.gpu(g).switch_fabric.state for g in range(4)} == {"in_progress"}  # type: ignore[union-attr]


def test_rack_faults_are_refused_where_they_cannot_happen() -> None:
    with pytest.raises(BadProbeRequest, match="needs a rack preset"):
        SimulatedFabric("hgx8", faults=[SwitchTrayLost(tray=0)])
    with pytest.raises(BadProbeRequest, match="needs a rack preset"):
        SimulatedFabric("h200x2", faults=[CliqueMoved(clique_id=3)])
    with pytest.raises(BadProbeRequest, match="switch tray 9 is not one of the rack's 9"):
        tray(1, "rack-a", SwitchTrayLost(tray=9))
    with pytest.raises(BadProbeRequest, match="GPU"):
        tray(1, "rack-a", InsufficientNvlinks(gpu=4))


def test_other_presets_have_no_rack_and_keep_their_links() -> None:
    assert load_preset("hgx8").rack is None
    fab = SimulatedFabric("hgx8", faults=[LinksDown(gpu=0, count=2)])
    assert fab.gpu(1).switch_fabric.health_issues == []  # type: ignore[union-attr]


def test_a_tray_report_is_a_valid_wire_report() -> None:
    fab = tray(2, "rack-a", InsufficientNvlinks(gpu=1))
    report = build_report(fab, options=SweepOptions(tests=(TestName.CE_WRITE,)))
    assert len(report.inventory.gpus) == 4 and len(report.results) == 12
    assert {g.switch_fabric.cluster_uuid for g in report.inventory.gpus  # type: ignore[union-attr]
            } == {rack_cluster_uuid("rack-a")}
