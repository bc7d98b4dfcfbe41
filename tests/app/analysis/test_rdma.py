"""app/analysis/rdma.py: GPUDirect RDMA readiness per GPU, with its reason and action."""

from __future__ import annotations

import pytest

from peerwatch.app.analysis.rdma import Readiness, judge_rdma
from peerwatch.probes.report import PathLevel, RdmaInfo

READY = RdmaInfo(gpudirect_supported=True, peermem_loaded=True, peermem_registered=True,
                 dmabuf=False, nearest_nic="mlx5_0", nic_path=PathLevel.PIX,
                 nic_port_state="ACTIVE", path_bridges=["0000:02:08.0", "0000:02:10.0"],
                 acs_redirect=[])


def test_a_near_nic_with_peermem_and_no_acs_is_ready() -> None:
    v = judge_rdma(0, READY)
    assert v.readiness is Readiness.READY
    assert "nvidia_peermem loaded and registered with ib_core" in v.reason
    assert "mlx5_0 PIX ACTIVE" in v.reason and "no ACS redirect on the path" in v.reason
    assert "bridges=0000:02:08.0,0000:02:10.0" in v.read


@pytest.mark.parametrize(("path", "readiness"), [
    (PathLevel.PIX, Readiness.READY), (PathLevel.PXB, Readiness.READY),
    (PathLevel.PHB, Readiness.POOR), (PathLevel.NODE, Readiness.POOR),
    (PathLevel.SYS, Readiness.POOR),
])
def test_path_classes(path: PathLevel, readiness: Readiness) -> None:
    v = judge_rdma(1, READY.model_copy(update={"nic_path": path}))
    assert v.readiness is readiness
    if readiness is Readiness.POOR:
        assert f"mlx5_0 is {path.value} from the GPU" in v.reason
        assert "PIX/PXB" in v.action


def test_acs_redirect_on_the_path_is_poor_and_between_gpus_is_named() -> None:
    v = judge_rdma(0, READY.model_copy(update={"acs_redirect": ["0000:02:08.0"],
                                               "peer_acs_redirect": {1: ["0000:02:08.0"]}}))
    assert v.readiness is Readiness.POOR
    assert "ACS redirect on 0000:02:08.0 between the GPU and mlx5_0" in v.reason
    assert "to GPU1 via 0000:02:08.0" in v.reason and "ACS" in v.action


def test_the_device_machine_reads_not_ready_plainly() -> None:
    """One H200 VM: no peermem, no NIC near it, no ACS capability (device_discovery.txt)."""
    r = RdmaInfo(gpudirect_supported=True, peermem_loaded=False, peermem_registered=False,
                 dmabuf=True)
    v = judge_rdma(0, r)
    assert v.readiness is Readiness.NOT_READY
    assert "no RDMA NIC on this host" in v.reason
    assert "no nvidia_peermem; dma-buf possible" in v.reason
    assert v.action.startswith("none needed unless this host should do GPUDirect RDMA")


def test_no_peer_memory_and_a_port_down() -> None:
    v = judge_rdma(0, READY.model_copy(update={"peermem_loaded": False,
                                               "peermem_registered": False, "dmabuf": False}))
    assert v.readiness is Readiness.NOT_READY and "no nvidia_peermem, no dma-buf" in v.reason
    assert "modprobe nvidia_peermem" in v.action
    loaded = judge_rdma(0, READY.model_copy(update={"peermem_registered": False}))
    assert loaded.readiness is Readiness.NOT_READY
    assert "loaded but not registered with ib_core" in loaded.reason
    down = judge_rdma(0, READY.model_copy(update={"nic_port_state": "DOWN"}))
    assert down.readiness is Readiness.NOT_READY and "mlx5_0 port DOWN" in down.reason


def test_dma_buf_stands_in_for_peermem() -> None:
    v = judge_rdma(0, READY.model_copy(update={"peermem_loaded": False,
                                               "peermem_registered": False, "dmabuf": True}))
    assert v.readiness is Readiness.READY and "dma-buf possible" in v.reason


def test_an_old_probe_is_unknown() -> None:
    v = judge_rdma(0, RdmaInfo())
    assert v.readiness is Readiness.UNKNOWN and "not read" in v.reason
