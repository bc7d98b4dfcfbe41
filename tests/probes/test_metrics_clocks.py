"""The agent's clock series: a power-capped simulated GPU reads so in
`peerwatch_gpu_clock_event_reasons` (bounded `reason` label, every name 0 or 1) and
`peerwatch_gpu_throttled`, its neighbour idles, units are base units, promtool-clean."""

from __future__ import annotations

from pathlib import Path

from peerwatch.probes.agent.agent_state import AgentState
from peerwatch.probes.agent.metrics_server import AgentExposition
from peerwatch.probes.agent.spool import Spool
from peerwatch.probes.clocks import REASON_NAMES
from peerwatch.probes.report import TestName
from peerwatch.probes.sim.faults import ThrottledGpu
from peerwatch.probes.sim.simulated import SimulatedFabric
from peerwatch.probes.sweep import SweepOptions, build_report
from tests.app.metrics_helpers import promtool_check, series, value

HOST = "mesh-09"


def test_a_power_capped_gpu_in_the_agent_series(tmp_path: Path) -> None:
    fab = SimulatedFabric("mesh4", seed=2, hostname=HOST, faults=[ThrottledGpu(gpu=2)])
    state = AgentState()
    state.record(build_report(fab, options=SweepOptions(tests=(TestName.CE_WRITE,))))
    spool = Spool(tmp_path / "spool", 1 << 20)
    try:
        text = AgentExposition(state, spool, None)().decode()
    finally:
        spool.close()
    assert promtool_check(text) == ""
    reasons = [s for s in series(text) if s.startswith("peerwatch_gpu_clock_event_reasons{")]
    assert len(reasons) == 4 * len(REASON_NAMES)  # bounded: 9 names per GPU, always all
    name = "peerwatch_gpu_clock_event_reasons"
    assert value(text, name, host=HOST, gpu="2", reason="sw_power_cap") == 1
    assert value(text, name, host=HOST, gpu="2", reason="gpu_idle") == 0
    assert value(text, name, host=HOST, gpu="1", reason="gpu_idle") == 1
    assert value(text, "peerwatch_gpu_throttled", host=HOST, gpu="2") == 1
    assert value(text, "peerwatch_gpu_throttled", host=HOST, gpu="1") == 0
    assert value(text, "peerwatch_gpu_power_limit_watts", host=HOST, gpu="2") == 450
    assert value(text, "peerwatch_gpu_sm_clock_max_hertz", host=HOST, gpu="1") == 1980e6
    assert value(text, "peerwatch_gpu_power_violation_seconds_total", host=HOST,
                 gpu="1") == 0
