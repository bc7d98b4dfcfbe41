"""Clocks-event reasons and GPUDirect RDMA readiness on the real GPU (skipped without one).

Needs NVML only (no CuPy, no second GPU): the one-H200 machine runs it. What the hardware
answers is checked for coherence, not for a fixed value: the mask is within the supported
mask and decodes to known names, the clocks and power are within their limits, a label
appears exactly when a throttle bit is set, and the RDMA verdict agrees with what /sys shows
(no RDMA device there: not ready, saying so).
"""

from __future__ import annotations

from peerwatch.app.analysis.rdma import Readiness, judge_rdma
from peerwatch.app.analysis.throttle import sweep_throttles
from peerwatch.probes.clocks import REASON_NAMES, decode
from peerwatch.probes.nvidia.nvml import Nvml
from peerwatch.probes.nvidia.rdma import RdmaReader
from peerwatch.probes.nvidia.sysfs import Sysfs


def test_clocks_read_and_decode(nvml: Nvml) -> None:
    for g in range(nvml.gpu_count()):
        c = nvml.clocks(g)
        assert c.reasons is not None and c.reasons_supported is not None
        assert c.reasons & ~c.reasons_supported == 0
        assert set(decode(c.reasons)) <= set(REASON_NAMES)
        assert c.sm_clock_mhz is not None and c.sm_clock_max_mhz is not None
        assert 0 < c.sm_clock_mhz <= c.sm_clock_max_mhz
        assert c.power_mw is not None and c.power_limit_mw is not None
        assert 0 < c.power_mw <= c.power_limit_mw * 1.2
        assert c.temperature_c is not None and c.slowdown_temperature_c is not None
        assert 0 < c.temperature_c < c.slowdown_temperature_c + 10
        again = nvml.clocks(g)
        assert (again.violation_power_ns or 0) >= (c.violation_power_ns or 0)
        found = sweep_throttles([c], [c])
        assert (g in found) == bool(c.throttled())


def test_rdma_readiness_agrees_with_sys(nvml: Nvml) -> None:
    sysfs = Sysfs()
    for g in range(nvml.gpu_count()):
        info = nvml.gpu(g)
        v = judge_rdma(g, info.rdma)
        assert v.readiness is not Readiness.UNKNOWN, v.reason
        if not sysfs.rdma_nics():
            assert v.readiness is Readiness.NOT_READY
            assert "no RDMA NIC on this host" in v.reason
        if info.rdma.peermem_loaded is False and not info.rdma.dmabuf:
            assert v.readiness is Readiness.NOT_READY
        acs = RdmaReader(sysfs).acs_of(info.pci_bus_id)
        assert acs is None or acs[0].endswith(info.pci_bus_id.lower()[-7:])
