"""The fabric state of a real host, read by the probe and judged: on an
NVSwitch board every GPU's registration is COMPLETED and the judge finds nothing to act on.
(The one-GPU machines are covered by bench/gpu/fabric_check.py: this fixture needs two.)"""

from __future__ import annotations

from peerwatch.app.analysis.fabric_state import judge_host_fabric
from peerwatch.app.analysis.verdict import Verdict
from peerwatch.probes.nvidia.real import RealFabric
from peerwatch.probes.report import RemoteType


def test_fabric_is_read_and_judged_healthy(fabric: RealFabric) -> None:
    gpus = {i: fabric.gpu(i) for i in range(fabric.gpu_count())}
    ports = {i: fabric.nvlinks(i) for i in gpus}
    if any(p.remote_type is RemoteType.NVSWITCH for ps in ports.values() for p in ps):
        for info in gpus.values():
            assert info.switch_fabric is not None
            assert (info.switch_fabric.state, info.switch_fabric.status) == (
                "completed", "success")
    verdict = judge_host_fabric("this host", gpus, ports, (), fabric.fabric_manager())
    assert verdict.verdict is Verdict.HEALTHY, verdict.reason
    assert fabric.host().probe_started_at is not None
