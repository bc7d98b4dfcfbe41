"""The driver's own verdicts on a real GPU: every read answers a value or a clean
"not supported", never a failure (skipped where there is no GPU)."""

from __future__ import annotations

from peerwatch.probes.errors import NotSupported
from peerwatch.probes.gpu_health import READS
from peerwatch.probes.nvidia.imex import imex_status
from peerwatch.probes.nvidia.nvml import Nvml


def test_every_driver_read_is_a_value_or_not_supported(nvml: Nvml) -> None:
    for gpu in range(nvml.gpu_count()):
        health = nvml.driver_health(gpu)
        for read in READS:
            reason = health.unread.get(read)
            assert (getattr(health, read) is None) == (reason is not None), (gpu, read)
            assert reason is None or reason.startswith("not supported: "), (gpu, reason)
        assert health.recovery_action is not None or "recovery_action" in health.unread
        try:
            aer = nvml.pcie_aer(gpu)
        except NotSupported:
            continue
        assert all(r.startswith("not supported: ") for r in aer.unread.values()), aer


def test_imex_is_read_or_not_present() -> None:
    status = imex_status()
    assert status.present or status.how.startswith("not present")
