"""RDMA NICs read from sysfs trees: a replayed recording (node_exporter's InfiniBand fixture:
an mlx4 HCA and an iWARP device without a PMA), and each read failing alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from peerwatch.probes.nvidia import sysfs_tree
from peerwatch.probes.nvidia.nics import NicReader, parse_rate, state_name
from peerwatch.probes.nvidia.sysfs import Sysfs

FIXTURE = Path(__file__).parents[2] / "fixtures/sysfs/node_exporter_ib.json"


@pytest.fixture
def reader(tmp_path: Path) -> NicReader:
    return NicReader(Sysfs(sysfs_tree.replay(sysfs_tree.load(FIXTURE), tmp_path)))


def test_every_device_with_its_pci_function_and_each_gpus_path(reader: NicReader) -> None:
    devices = {d.name: d for d in reader.devices({0: "00000000:02:00.0"})}
    mlx = devices["mlx4_0"]
    assert (mlx.hca_type, mlx.fw_ver, mlx.board_id) == ("MT4099", "2.31.5050", "SM_1141000001000")
    assert (mlx.pci_bus_id, mlx.numa_node, mlx.ports) == ("0000:03:00.0", 0, [1, 2])
    assert mlx.gpu_paths == {0: "PIX"} and mlx.unread == {}  # one bridge above both
    assert devices["i40iw0"].gpu_paths == {0: "SYS"}  # another root complex and NUMA node


def test_every_port_as_recorded(reader: NicReader) -> None:
    ports = {p.key: p for p in reader.ports()}
    one = ports[("mlx4_0", 1)]
    assert (one.state, one.phys_state, one.rate_gbps, one.link_layer) == (
        "ACTIVE", "LinkUp", 40.0, "InfiniBand")
    assert one.rate_text == "40 Gb/sec (4X QDR)"
    assert one.counters["port_xmit_discards"] == 5 and one.counters["port_xmit_wait"] == 2**32 - 1
    assert one.counters["port_rcv_packets"] == 6825908347  # past 32 bits: kept whole
    # this HCA keeps no symbol_error file: named, never a zero
    assert "symbol_error" not in one.counters
    assert one.unread["symbol_error"] == "not supported: no counters/symbol_error"
    assert ports[("mlx4_0", 2)].counters["link_downed"] == 0


def test_a_device_without_a_pma_says_not_supported_for_each_counter(reader: NicReader) -> None:
    iw = {p.key: p for p in reader.ports()}[("i40iw0", 1)]
    assert iw.counters == {} and iw.state == "ACTIVE" and iw.rate_gbps == 10.0
    assert iw.unread["link_downed"] == "not supported: N/A (no PMA)"
    assert iw.unread["symbol_error"] == "not supported: N/A (no PMA)"


def test_each_read_fails_alone(tmp_path: Path) -> None:
    """A garbled counter, an unreadable rate, a missing state: each named, the rest read."""
    tree = sysfs_tree.load(FIXTURE)
    base = "sys/class/infiniband/mlx4_0/ports/1"
    tree["files"][f"{base}/counters/link_downed"] = "garbage"
    tree["files"][f"{base}/rate"] = "fast"
    del tree["files"][f"{base}/state"]
    tree["files"][f"{base}/hw_counters/out_of_buffer"] = "17"
    tree["files"][f"{base}/hw_counters/lifespan"] = "10"  # a setting, not a count
    reader = NicReader(Sysfs(sysfs_tree.replay(tree, tmp_path)))
    one = {p.key: p for p in reader.ports()}[("mlx4_0", 1)]
    assert one.unread["link_downed"].startswith("failed: link_downed reads 'garbage'")
    assert one.unread["rate"] == "failed: rate reads 'fast'" and one.rate_gbps is None
    assert one.unread["state"] == "not supported: no state" and one.state is None
    assert one.phys_state == "LinkUp" and one.counters["port_xmit_discards"] == 5
    assert one.hw_counters == {"out_of_buffer": 17}


def test_a_host_without_rdma_devices_has_none(tmp_path: Path) -> None:
    reader = NicReader(Sysfs(tmp_path))
    assert reader.devices({0: "00000000:02:00.0"}) == [] and reader.ports() == []


def test_text_forms_of_the_kernel() -> None:
    assert state_name("4: ACTIVE") == "ACTIVE" and state_name("1: DOWN") == "DOWN"
    assert parse_rate("400 Gb/sec (4X NDR)") == 400.0 and parse_rate("2.5 Gb/sec (1X SDR)") == 2.5


def test_a_tree_that_climbs_out_is_refused(tmp_path: Path) -> None:
    with pytest.raises(sysfs_tree.BadTree, match="not a relative path"):
        sysfs_tree.replay({"files": {"../etc/passwd": "x"}}, tmp_path)
    with pytest.raises(sysfs_tree.BadTree, match="leaves the tree"):
        sysfs_tree.replay({"files": {}, "links": {"sys/x": "../../../etc"}}, tmp_path / "r")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"links": {}}))
    with pytest.raises(sysfs_tree.BadTree, match="'files'"):
        sysfs_tree.load(bad)
