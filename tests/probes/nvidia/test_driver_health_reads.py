"""The driver's health reads (nvml_health.py, aer.py) against recorded NVML answers and
sysfs trees: every fixture under tests/fixtures/driver_health/ is replayed through the very
`Nvml` the probe uses, and must read as its `health` and `aer` sections say (the
hand-written one's were written by hand; a recorded one's are what the device read)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from peerwatch.probes.errors import NotSupported
from peerwatch.probes.gpu_health import READS, GpuDriverHealth, PcieAer
from peerwatch.probes.nvidia.nvml import Nvml
from peerwatch.probes.nvidia.sysfs import Sysfs
from tests.probes.nvidia.replay_pynvml import FIXTURES, ReplayPynvml, load, sysfs_tree

PATHS = sorted(FIXTURES.glob("*.json"))


def _nvml(fixture: dict[str, Any], tmp_path: Path) -> Nvml:
    return Nvml(module=ReplayPynvml(fixture), sysfs=Sysfs(sysfs_tree(fixture, tmp_path)))


def test_a_hand_written_fixture_is_there_and_says_so() -> None:
    hand = [load(p) for p in PATHS if load(p)["hand_written"]]
    assert hand and all("HAND-WRITTEN" in f["note"] for f in hand)


@pytest.mark.parametrize("path", PATHS, ids=lambda p: p.stem)
def test_every_read_gives_what_the_fixture_says(path: Path, tmp_path: Path) -> None:
    fixture = load(path)
    nvml = _nvml(fixture, tmp_path)
    try:
        assert nvml.gpu_count() == len(fixture["gpus"])
        for g in fixture["gpus"]:
            health = nvml.driver_health(g["index"])
            assert health == GpuDriverHealth.model_validate(g["health"]), g["index"]
            for read in READS:  # a value, or a reason that says which kind
                reason = health.unread.get(read, "")
                assert (getattr(health, read) is None) == bool(reason), (read, reason)
                assert not reason or reason.startswith(("not supported: ", "failed: "))
            if "not_supported" in g["aer"]:
                with pytest.raises(NotSupported):
                    nvml.pcie_aer(g["index"])
            else:
                assert nvml.pcie_aer(g["index"]) == PcieAer.model_validate(g["aer"])
    finally:
        nvml.close()


def test_the_hand_written_faults_read_as_written(tmp_path: Path) -> None:
    nvml = _nvml(load(FIXTURES / "hand_written_h100x2.json"), tmp_path)
    bad, aer = nvml.driver_health(1), nvml.pcie_aer(1)
    assert bad.recovery_action == "drain_p2p" and bad.row_remap and bad.row_remap.pending
    assert bad.ecc and bad.ecc.volatile_uncorrected == 1
    assert "retired_pages" in bad.unread and bad.retired_pages is None
    assert aer.total("correctable") == 7 + 3  # the bridge's file has no TOTAL line: summed
    assert aer.total("fatal") is None and aer.bridge == "0000:39:00.0"
    nvml.close()


def test_a_gpu_query_that_fails_is_named_and_the_others_stand(tmp_path: Path) -> None:
    fixture = load(FIXTURES / "hand_written_h100x2.json")
    for call in fixture["nvml_calls"]:
        if call["fn"] == "nvmlDeviceGetRemappedRows" and call["args"] == [{"gpu": 0}]:
            call.pop("value")
            call |= {"error": 15, "error_text": "GPU is lost"}
    nvml = _nvml(fixture, tmp_path)
    health = nvml.driver_health(0)
    assert health.row_remap is None and health.unread["row_remap"].startswith("failed: ")
    assert "GPU is lost" in health.unread["row_remap"]
    assert health.recovery_action == "none" and health.ecc is not None
    nvml.close()


def test_bindings_without_the_recovery_field_say_not_supported(tmp_path: Path) -> None:
    fixture = load(FIXTURES / "hand_written_h100x2.json")
    del fixture["constants"]["NVML_FI_DEV_GET_GPU_RECOVERY_ACTION"]
    nvml = _nvml(fixture, tmp_path)
    reason = nvml.driver_health(0).unread["recovery_action"]
    assert reason.startswith("not supported: ") and "NVML_FI_DEV_GET_GPU_RECOVERY_ACTION" in reason
    nvml.close()


def test_a_gpu_without_aer_files_says_not_supported(tmp_path: Path) -> None:
    fixture = load(FIXTURES / "hand_written_h100x2.json")
    for name in fixture["gpus"][0]["sysfs"]:
        fixture["gpus"][0]["sysfs"][name] = {k: None for k in fixture["gpus"][0]["sysfs"][name]}
    nvml = _nvml(fixture, tmp_path)
    aer = nvml.pcie_aer(0)
    assert aer.device is None and aer.unread["device"].startswith("not supported: ")
    assert aer.bridge_counts is None and aer.unread["bridge"].startswith("not supported: ")
    nvml.close()
