"""RealFabric and the CuPy loader on a machine without GPUs (the CI machine, a laptop)."""

from __future__ import annotations

import sys
from types import SimpleNamespace

import pytest

from peerwatch.probes.errors import FabricUnavailable
from peerwatch.probes.fabric import Fabric, TestSpec
from peerwatch.probes.nvidia.real import RealFabric
from peerwatch.probes.nvidia.sysfs import Sysfs
from peerwatch.probes.nvidia.transfers import Transfers, load_cupy
from peerwatch.probes.report import TestName
from tests.probes.fake_pynvml import FakePynvml


def test_default_construction_is_a_gpu_host_or_fabric_unavailable() -> None:
    """Where NVML or its GPUs are missing the only failure is FabricUnavailable."""
    try:
        fabric = RealFabric()
    except FabricUnavailable as exc:
        assert str(exc)
        return
    fabric.close()


def test_missing_cupy_is_fabric_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cupy", None)  # makes `import cupy` raise ImportError
    with pytest.raises(FabricUnavailable, match="CuPy is not installed"):
        load_cupy()


def test_cupy_without_a_driver_is_fabric_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    no_gpu = SimpleNamespace(cuda=SimpleNamespace(is_available=lambda: False))
    monkeypatch.setitem(sys.modules, "cupy", no_gpu)
    with pytest.raises(FabricUnavailable, match="no GPU"):
        Transfers()


def test_inventory_works_without_cupy(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setitem(sys.modules, "cupy", None)
    fabric = RealFabric(nvml_module=FakePynvml.from_dump(), sysfs=Sysfs(tmp_path))
    assert isinstance(fabric, Fabric)
    assert fabric.name == "nvml"
    assert fabric.gpu_count() == 2
    pair = fabric.pair(0, 1)
    assert pair.topology == "NV18" and pair.can_access_peer is None
    assert fabric.gpu(1).rdma.gpudirect_supported is None
    host = fabric.host()
    assert (host.fabric, host.driver_version, host.cuda_version) == ("nvml", "580.159.04", "13.0")
    with pytest.raises(FabricUnavailable):
        fabric.measure(TestSpec(TestName.CE_WRITE, src=0, dst=1))
    fabric.close()
