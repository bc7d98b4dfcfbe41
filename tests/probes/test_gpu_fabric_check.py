"""bench/gpu/fabric_check.py: the lines it prints from the probe's readings (the fake H200 pair
and the one-H200 machine whose V call segfaults), and a failed reading reported, not raised."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from peerwatch.probes.nvidia.host_runtime import HostRuntime
from peerwatch.probes.nvidia.nvml import Nvml
from peerwatch.probes.nvidia.sysfs import Sysfs
from tests.probes.fake_pynvml import FakePynvml

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "gpu" / "fabric_check.py"
spec = importlib.util.spec_from_file_location("gpu_fabric_check", SCRIPT)
assert spec is not None and spec.loader is not None
check = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check)


def lines(fake: FakePynvml, tmp_path) -> list[str]:
    nvml = Nvml(module=fake, sysfs=Sysfs(tmp_path))
    data = check.read_fabric(nvml, HostRuntime(tmp_path))
    return check.describe(data) + check.verdict(data)


def test_nvswitch_pair(tmp_path) -> None:
    out = lines(FakePynvml.from_dump(), tmp_path)
    assert "GPU0 NVIDIA H200: 18/18 NVLinks up" in out[1]
    assert "state='completed'" in out[1] or "'completed'" in out[1]
    assert out[3].startswith("verdict: ")  # Fabric Manager unknown here: no /proc in tmp_path


def test_one_h200_without_fabric_never_calls_v(tmp_path) -> None:
    fake = FakePynvml.from_dump(legacy_fabric={"state": 0}, v_segfaults=True)
    out = lines(fake, tmp_path)
    assert "fabric None" in out[1]
    assert "nvmlDeviceGetGpuFabricInfoV" not in fake.calls


def test_no_driver_is_a_line_not_a_crash(capsys) -> None:
    assert check.main() in (0, 1)
    assert capsys.readouterr().out.strip()
