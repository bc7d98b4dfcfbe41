"""probes/nvidia/nvml_fabric.py: the legacy fabric call decides before the V call (which crashed the
process on a one-H200 machine without NVLink, REFERENCE.md section 6)."""

from __future__ import annotations

import pytest

from peerwatch.probes.nvidia.nvml import Nvml
from peerwatch.probes.nvidia.nvml_fabric import decode_health_mask
from peerwatch.probes.nvidia.sysfs import Sysfs
from tests.probes.fake_pynvml import FakePynvml

V = "nvmlDeviceGetGpuFabricInfoV"
LEGACY = "nvmlDeviceGetGpuFabricInfo"


def session(fake: FakePynvml, tmp_path, child_ok: bool | None = None) -> Nvml:
    def child(_gpu: int) -> bool:
        if child_ok is None:
            raise AssertionError("the child-process check must not run here")
        return child_ok

    return Nvml(module=fake, sysfs=Sysfs(tmp_path), fabric_child_check=child)


def test_one_h200_machine_never_calls_v(tmp_path) -> None:
    """Legacy answers state 0 (NOT_SUPPORTED); V would segfault: it is never called."""
    fake = FakePynvml.from_dump(legacy_fabric={"state": 0, "status": 0}, v_segfaults=True)
    nvml = session(fake, tmp_path)
    for gpu in range(nvml.gpu_count()):
        assert nvml.gpu(gpu).switch_fabric is None
    assert LEGACY in fake.calls and V not in fake.calls


def test_legacy_not_supported_never_calls_v(tmp_path) -> None:
    fake = FakePynvml.from_dump(legacy_fabric=None, v_segfaults=True)
    assert session(fake, tmp_path).gpu(0).switch_fabric is None
    assert V not in fake.calls


def test_completed_fabric_reads_health_through_v(tmp_path) -> None:
    mask = (1 << 4) | (2 << 0)  # route unhealthy; degraded bandwidth "false"
    fake = FakePynvml.from_dump(fabric={"state": 3, "status": 0, "cliqueId": 7,
                                        "clusterUuid": bytes(range(1, 17)),
                                        "healthMask": mask, "healthSummary": 2})
    info = session(fake, tmp_path).gpu(0).switch_fabric
    assert info is not None
    assert (info.state, info.status, info.clique_id) == ("completed", "success", 7)
    assert (info.health, info.health_mask, info.source) == ("unhealthy", mask, "v3")
    assert info.health_issues == ["route_unhealthy"]
    assert info.cluster_uuid == bytes(range(1, 17)).hex()
    assert fake.calls.index(LEGACY) < fake.calls.index(V)


def test_v_refused_keeps_the_legacy_answer(tmp_path) -> None:
    fake = FakePynvml.from_dump(fabric=None, legacy_fabric={"state": 2, "status": 0})
    info = session(fake, tmp_path).gpu(0).switch_fabric
    assert info is not None
    assert (info.state, info.source, info.health) == ("in_progress", "legacy", None)


def test_error_status_is_named(tmp_path) -> None:
    fake = FakePynvml.from_dump(fabric={"state": 3, "status": 999, "cliqueId": 0})
    info = session(fake, tmp_path).gpu(0).switch_fabric
    assert info is not None and info.status == "unknown"


@pytest.mark.parametrize("child_ok", [False, True])
def test_without_the_legacy_call_a_child_process_decides(tmp_path, child_ok: bool) -> None:
    fake = FakePynvml.from_dump(has_legacy=False, v_segfaults=not child_ok)
    info = session(fake, tmp_path, child_ok=child_ok).gpu(0).switch_fabric
    assert (V in fake.calls) is child_ok
    assert (info is not None) is child_ok


def test_health_mask_decoding() -> None:
    assert decode_health_mask(0) == []
    assert decode_health_mask(0b10_10_10_10) == []  # every issue explicitly "false"
    assert decode_health_mask(1 | 1 << 2) == ["degraded_bandwidth", "route_recovery_in_progress"]
    assert decode_health_mask(5 << 8) == ["incorrect_configuration:insufficient_nvlinks"]
    assert decode_health_mask(2 << 14) == ["fabric_manager_disconnected"]
