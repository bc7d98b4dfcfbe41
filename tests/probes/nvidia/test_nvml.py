"""probes/nvidia/nvml.py against a fake pynvml replaying the real H200 pair's NVML dump."""

from __future__ import annotations

import pytest

from peerwatch.probes.errors import BadProbeRequest, FabricUnavailable, NotSupported
from peerwatch.probes.nvidia.nvml import Nvml, NvmlQueryError, load_pynvml
from peerwatch.probes.nvidia.sysfs import Sysfs
from peerwatch.probes.report import LinkState, P2PCap, P2PStatus, PathLevel, RemoteType
from tests.probes import fake_pynvml
from tests.probes.fake_pynvml import FakePynvml


@pytest.fixture
def fake() -> FakePynvml:
    return FakePynvml.from_dump()


@pytest.fixture
def nvml(fake: FakePynvml, tmp_path) -> Nvml:
    session = Nvml(module=fake, sysfs=Sysfs(tmp_path))  # an empty /sys: nothing to add
    yield session
    session.close()


def test_fake_constants_match_the_real_bindings() -> None:
    real = load_pynvml()
    for name in dir(fake_pynvml):
        if name.startswith("NVML_"):
            assert getattr(real, name) == getattr(fake_pynvml, name), name


def test_gpus_from_the_dump(nvml: Nvml) -> None:
    assert nvml.gpu_count() == 2
    g = nvml.gpu(0)
    assert g.name == "NVIDIA H200"
    assert g.uuid == "GPU-32cae638-31c1-569b-971a-2b88862f5e48"
    assert g.pci_bus_id == "00000000:00:06.0"
    assert g.memory_total_bytes == 150754820096
    assert g.cpu_affinity == "0-31"
    assert g.numa_node == 0  # NumaNodeId NotSupported, /sys empty: the memory affinity's node
    assert g.nvlink_count == 18
    assert (g.pcie.gen_current, g.pcie.gen_max, g.pcie.width_current) == (5, 5, 16)
    assert g.pcie.replay_count == 0
    assert g.rdma.nearest_nic is None and g.rdma.peermem_loaded is None
    assert g.switch_fabric is not None
    assert (g.switch_fabric.state, g.switch_fabric.status) == ("completed", "success")
    assert g.switch_fabric.health == "healthy"
    assert nvml.driver_version() == "580.159.04"
    assert nvml.cuda_version() == "13.0"


def test_nvlink_ports_on_nvswitch(nvml: Nvml, fake: FakePynvml) -> None:
    ports = nvml.nvlinks(0)
    assert [p.link for p in ports] == list(range(18))  # LINK_COUNT, never MAX_LINKS (36)
    p = ports[0]
    assert p.state is LinkState.UP
    assert p.version == "4.0"  # NVML's enum 6
    assert p.speed_bps == pytest.approx(26.562e9)
    assert p.remote_type is RemoteType.NVSWITCH
    assert p.remote_pci_bus_id is None and p.remote_gpu is None  # FFFFFFFF:FF:FF.0 names none
    assert p.capabilities["p2p_supported"] and p.capabilities["p2p_atomics"]


def test_pair_is_nv18_via_nvswitch_with_p2p_statuses(nvml: Nvml) -> None:
    pair = nvml.pair(0, 1)
    assert pair.topology == "NV18"
    assert (pair.nvlink_width, pair.via_nvswitch) == (18, True)
    assert pair.pcie_path is PathLevel.PHB  # NVML's common ancestor is PCIe only (30)
    assert pair.p2p == {
        P2PCap.READ: P2PStatus.OK,  # passed as the integer 0, not the bindings' tuple
        P2PCap.WRITE: P2PStatus.OK,
        P2PCap.NVLINK: P2PStatus.OK,
        P2PCap.ATOMICS: P2PStatus.OK,
        P2PCap.PCI: P2PStatus.NOT_SUPPORTED,
    }
    assert pair.can_access_peer is None  # CUDA's to answer, not NVML's


def test_nvswitch_width_is_the_smaller_gpu(fake: FakePynvml, tmp_path) -> None:
    for port in fake.devices[1]["links"][:3]:
        port["state"] = 0
    session = Nvml(module=fake, sysfs=Sysfs(tmp_path))
    assert session.pair(0, 1).topology == "NV15"
    assert session.pair(1, 0).nvlink_width == 15


def test_direct_attached_links_name_their_peer(fake: FakePynvml, tmp_path) -> None:
    session = Nvml(module=fake.direct_attached(links_to_peer=12), sysfs=Sysfs(tmp_path))
    ports = session.nvlinks(0)
    assert ports[0].remote_type is RemoteType.GPU
    assert ports[0].remote_pci_bus_id == "00000000:00:07.0"
    assert ports[0].remote_gpu == 1
    assert ports[12].state is LinkState.DOWN and ports[12].remote_gpu is None
    pair = session.pair(1, 0)
    assert (pair.topology, pair.nvlink_width, pair.via_nvswitch) == ("NV12", 12, False)
    assert session.gpu(0).switch_fabric is None  # fabric query NotSupported: absent


def test_counters_in_one_field_call_per_gpu(nvml: Nvml, fake: FakePynvml) -> None:
    nvml.link_counters(0)  # the first read also learns the link count
    fake.calls.clear()
    before = nvml.link_counters(0)
    assert fake.calls.count("nvmlDeviceGetFieldValues") == 1  # every link's counters at once
    assert len(before) == 18
    c = before[0]
    assert (c.replay, c.recovery, c.crc_flit, c.crc_data, c.ecc_data) == (0, 0, 0, 12, 18)
    fake.add_traffic(0, 18 * 1024 * 1000)
    after = nvml.link_counters(0)
    delta = sum(a.tx_bytes - b.tx_bytes for a, b in zip(after, before, strict=True))
    assert delta == 18 * 1024 * 1000  # KiB counters reported in bytes


def test_activity_and_pcie(nvml: Nvml) -> None:
    a = nvml.activity(1)
    assert (a.utilization_pct, a.memory_used_bytes, a.compute_processes) == (0.0, 644939776, 0)
    assert nvml.pcie_replay(1) == 0


def test_unsupported_fields_are_absent(fake: FakePynvml, tmp_path) -> None:
    for port in fake.devices[0]["links"][:18]:
        port["errors"]["NVML_NVLINK_ERROR_DL_ECC_DATA"] = "ERR:NVMLError_NotSupported:x"
        port["version"] = "ERR:NVMLError_NotSupported:x"
    del fake.devices[0]["fields_per_link"]["NVML_FI_DEV_NVLINK_GET_SPEED"]
    del fake.devices[0]["fields"]["NVML_FI_DEV_NVLINK_GET_SPEED"]
    fake.devices[0]["util"] = "unused"
    fake.nvmlDeviceGetUtilizationRates = _not_supported  # type: ignore[method-assign]
    session = Nvml(module=fake, sysfs=Sysfs(tmp_path))
    counters = session.link_counters(0)
    assert counters[0].ecc_data is None and counters[0].crc_data == 12
    port = session.nvlinks(0)[0]
    assert port.version is None and port.speed_bps is None
    assert session.activity(0).utilization_pct is None


def _not_supported(*_args: object) -> None:
    raise fake_pynvml.NVMLError_NotSupported(fake_pynvml.NVML_ERROR_NOT_SUPPORTED)


def test_other_nvml_errors_name_the_item(fake: FakePynvml, tmp_path) -> None:
    def lost(*_args: object) -> None:
        raise fake_pynvml.NVMLError_GpuIsLost(fake_pynvml.NVML_ERROR_GPU_IS_LOST)

    fake.nvmlDeviceGetPcieReplayCounter = lost  # type: ignore[method-assign]
    session = Nvml(module=fake, sysfs=Sysfs(tmp_path))
    with pytest.raises(NvmlQueryError, match="gpu=1") as info:
        session.pcie_replay(1)
    assert isinstance(info.value.__cause__, fake_pynvml.NVMLError)


def test_unsupported_query_raises_not_supported(fake: FakePynvml, tmp_path) -> None:
    fake.nvmlDeviceGetPcieReplayCounter = _not_supported  # type: ignore[method-assign]
    with pytest.raises(NotSupported):
        Nvml(module=fake, sysfs=Sysfs(tmp_path)).pcie_replay(0)


@pytest.mark.parametrize("code", [fake_pynvml.NVML_ERROR_LIBRARY_NOT_FOUND,
                                  fake_pynvml.NVML_ERROR_DRIVER_NOT_LOADED])
def test_no_driver_is_fabric_unavailable(code: int) -> None:
    with pytest.raises(FabricUnavailable) as info:
        Nvml(module=FakePynvml.from_dump(init_error=code))
    assert isinstance(info.value.__cause__, fake_pynvml.NVMLError)


def test_no_gpus_is_fabric_unavailable(fake: FakePynvml) -> None:
    fake.devices.clear()
    with pytest.raises(FabricUnavailable, match="no GPUs"):
        Nvml(module=fake)
    assert fake.calls[-1] == "nvmlShutdown"


def test_bad_gpu_index_is_the_callers_mistake(nvml: Nvml) -> None:
    with pytest.raises(BadProbeRequest, match="no GPU 7"):
        nvml.gpu(7)
    with pytest.raises(BadProbeRequest):
        nvml.pair(1, 1)


def test_close_shuts_nvml_down_once(fake: FakePynvml, tmp_path) -> None:
    session = Nvml(module=fake, sysfs=Sysfs(tmp_path))
    session.close()
    session.close()
    assert fake.calls.count("nvmlShutdown") == 1


def test_api_only_error_counters_are_reused_briefly(nvml: Nvml, fake: FakePynvml,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    first = nvml.link_counters(0)[0]
    assert first.crc_data == 12
    fake.devices[0]["links"][0]["errors"]["NVML_NVLINK_ERROR_DL_CRC_DATA"] = 20
    fake.add_traffic(0, 18 << 20)
    again = nvml.link_counters(0)[0]
    assert again.tx_bytes == first.tx_bytes + (1 << 20)  # traffic counters: always fresh
    assert again.crc_data == 12  # within ERROR_COUNTER_TTL_S: the slow per-link calls are skipped
    monkeypatch.setattr("peerwatch.probes.nvidia.nvlink.ERROR_COUNTER_TTL_S", 0.0)
    assert nvml.link_counters(0)[0].crc_data == 20


def test_the_probe_does_not_count_itself_as_a_busy_process(fake: FakePynvml, tmp_path) -> None:
    import os
    from types import SimpleNamespace

    fake.devices[0]["procs"] = [SimpleNamespace(pid=os.getpid()), SimpleNamespace(pid=4242)]
    (tmp_path / "proc/self").mkdir(parents=True)
    (tmp_path / "proc/self/status").write_text("Name:\tpython\nNSpid:\t77\t1\n")
    fake.devices[1]["procs"] = [SimpleNamespace(pid=77)]  # seen from an outer PID namespace
    session = Nvml(module=fake, sysfs=Sysfs(tmp_path))
    assert session.activity(0).compute_processes == 1
    assert session.activity(1).compute_processes == 0
