"""bench/gpu/evidence.py on the one-H200 machine's shape (a fake pynvml answering its
measured clocks, a /sys tree shaped like its own): the lines the device run prints, and the
verdict saying plainly that RDMA is not ready there, and why."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from bench.gpu import evidence
from peerwatch.probes.nvidia.nvml import Nvml
from peerwatch.probes.nvidia.sysfs import Sysfs
from tests.probes.fake_pynvml import H200_IDLE_CLOCKS, FakePynvml
from tests.probes.nvidia.test_rdma_sysfs import device_machine


def test_the_device_machine_reading(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    device_machine(tmp_path)
    fake = FakePynvml.from_dump()
    fake.devices[0]["clocks"] = copy.deepcopy(H200_IDLE_CLOCKS)
    sysfs = Sysfs(tmp_path)
    assert evidence.main(Nvml(module=fake, sysfs=sysfs), sysfs, pause_s=0.0) == 0
    out = capsys.readouterr().out
    gpu0 = out.split("GPU1 ")[0]
    assert "clocks-event reasons: 1 = ['gpu_idle'] (supported 511); throttle: none" in gpu0
    assert "SM 345 of 1980 MHz; power 78 of 700 W; 37 C (slowdown 89 C)" in gpu0
    assert "violation_power_ns: 0 (+0 ns in 0 s)" in gpu0
    assert "0000:00:06.0: no ACS capability" in gpu0
    assert "/sys/class/infiniband: none; peermem loaded False" in gpu0
    assert "verdict: not_ready: GPU0 GPUDirect RDMA not ready: no RDMA NIC" in gpu0
    assert "no nvidia_peermem; dma-buf possible" in gpu0
    assert "acs_redirect=no NIC path" in gpu0
    # GPU1 of the dump answers no clocks query: "unread", not a failure
    assert "clocks-event reasons: None = unread" in out.split("GPU1 ")[1]
    assert "failed:" not in out
