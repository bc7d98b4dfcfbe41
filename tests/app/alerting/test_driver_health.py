"""The driver's own verdicts, end to end on a simulated host: each fault is read by the probe,
stored, judged, alerted, exported and left out of the scheduler answer, with the driver's
words and the action on the GPU's verdict (app/analysis/gpu_health.py)."""

from __future__ import annotations

import pytest
from sqlalchemy.orm import Session, sessionmaker

from peerwatch.app.analysis.verdict import Verdict
from peerwatch.app.exposition.loader import load_snapshot
from peerwatch.app.queries.health import host_health
from peerwatch.app.queries.scheduler import schedulable
from peerwatch.app.runtime.config import Settings
from peerwatch.probes.sim import faults
from tests.app.alerting.simhost import SimHost

CASES = [  # fault, rule, kind, verdict, words in the GPU's reason
    (faults.GpuRecoveryAction(gpu=1, action="drain_p2p"), "GPURecoveryActionRequired",
     "recovery_action", Verdict.DOWN, "DRAIN_P2P"),
    (faults.RowRemapPending(gpu=1), "GPURowRemapPending", "row_remap_pending",
     Verdict.DEGRADED, "reset the GPU when idle"),
    (faults.RowRemapFailed(gpu=1), "GPUMemoryFailed", "row_remap_failure", Verdict.DOWN,
     "replace the GPU"),
    (faults.AerGrowth(gpu=1, kind="correctable", per_second=0.5), "GPUPcieAerRising", "aer",
     Verdict.DEGRADED, "PCIe AER errors rising (correctable"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: type(c[0]).__name__)
def test_a_driver_fault_is_judged_alerted_exported_and_left_out(
        sessions: sessionmaker[Session], sqlite_settings: Settings,
        case: tuple[faults.Fault, str, str, Verdict, str]) -> None:
    fault, rule, kind, verdict, words = case
    host = SimHost(sessions, sqlite_settings, preset="h200x2", hostname="drv-a")
    for _ in range(2):
        host.step(300, "sweep")
    assert not host.alerts("pending") + host.alerts("firing")
    host.inject(fault)
    for _ in range(3):
        host.step(30)
    with host.sessions() as s:
        health = host_health(s, host.settings, host.hostname)
        offered = [h for h in schedulable(s, 1)[0] if h.host == host.hostname]
        snapshot = load_snapshot(s)
    gpu = {g.gpu: g for g in health.judgement.gpus}[1]
    assert gpu.verdict is verdict and words in gpu.reason, gpu.reason
    assert {g.gpu: g.verdict for g in health.judgement.gpus}[0] is Verdict.HEALTHY
    pages = {(a.rule, a.labels.get("gpu"), a.labels.get("kind"))
             for a in host.alerts("pending") + host.alerts("firing")}
    assert (rule, "1", kind) in pages, pages
    assert all(1 not in h.healthy_gpus for h in offered)  # the scheduler leaves GPU1 out
    pairs = [p for p in health.judgement.pairs if 1 in (p.src, p.dst)]
    if kind == "recovery_action":  # DRAIN_P2P: no figure through GPU1 is offered as healthy
        assert pairs and all(p.verdict is not Verdict.HEALTHY and "DRAIN_P2P" in p.reason
                             for p in pairs), [(p.verdict, p.reason) for p in pairs]
    exported = {g.gpu: g.driver for g in snapshot.gpus if g.host == host.hostname}
    assert (kind, verdict.value) in exported[1] and exported[0] == (), exported


def test_drain_p2p_logs_xid_154_and_the_host_names_it(
        sessions: sessionmaker[Session], sqlite_settings: Settings) -> None:
    host = SimHost(sessions, sqlite_settings, preset="h200x2", hostname="drv-b")
    host.step(300, "sweep")
    host.inject(faults.GpuRecoveryAction(gpu=1, action="drain_p2p"))
    host.step(30)
    rules = {a.rule for a in host.alerts("pending") + host.alerts("firing")}
    assert {"GPURecoveryActionRequired", "XidWarning"} <= rules, rules
    host.clear(faults.GpuRecoveryAction(gpu=1, action="drain_p2p"))
    host.step(30)
    assert "GPURecoveryActionRequired" not in {a.rule for a in host.alerts("firing")}
