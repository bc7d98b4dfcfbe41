"""GPUDirectRDMADegraded on the simulated hgx8 with gdr_loopback opted in: a GPU whose
nearest NIC sits across the sockets (NicPathSys) is judged degraded on that test and paged
once, naming the NIC; the same page from promtool's evaluation of the twin over the agent's
and the server's own scrapes; none where the NIC's port flaps (NICPortFlapping's page)."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import update
from sqlalchemy.orm import Session, sessionmaker

from peerwatch.app.analysis.verdict import Verdict
from peerwatch.app.exposition.gdr import load_gdr
from peerwatch.app.queries.health import host_health
from peerwatch.app.queries.scheduler import schedulable
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.tables.judged import JudgedTest
from peerwatch.probes.report import TestName
from peerwatch.probes.sim import faults
from peerwatch.probes.sweep import SweepOptions
from tests.app.alerting.promql_twin import TwinHost
from tests.app.alerting.simhost import SimHost
from tests.app.alerting.test_promql_equals_server import assert_prometheus_agrees, expected

SWEEP_S = 300.0
GDR = SweepOptions(tests=(TestName.CE_WRITE, TestName.GDR_LOOPBACK))
RULE = "GPUDirectRDMADegraded"


def _gdr_verdicts(host: SimHost) -> dict[int, Verdict]:
    with host.sessions() as s:
        health = host_health(s, host.settings, host.hostname)
    return {src: j.verdict for (src, _dst, test), j in health.tests.items()
            if test == TestName.GDR_LOOPBACK}


def test_a_gpu_whose_nic_sits_across_the_sockets_is_paged_once_naming_the_nic(
        sessions: sessionmaker[Session], sqlite_settings: Settings) -> None:
    host = SimHost(sessions, sqlite_settings, preset="hgx8", options=GDR)
    for _ in range(2):
        host.step(SWEEP_S, "sweep")
    host.inject(faults.NicPathSys(gpu=1))
    host.step(SWEEP_S, "sweep")
    assert RULE not in host.firing()  # one low sweep: not sustained yet
    for _ in range(2):
        host.step(SWEEP_S, "sweep")
    verdicts = _gdr_verdicts(host)
    assert [g for g, v in verdicts.items() if v is not Verdict.HEALTHY] == [1]
    assert host.active()[RULE] == {(("gpu", "1"), ("host", "sim-a"), ("nic", "mlx5_1"))}
    [alert] = host.alerts("firing", rule=RULE)
    assert alert.annotations["summary"] == "GPU1 on sim-a: GPUDirect RDMA through mlx5_1 is slow"
    assert "mlx5_1 line rate" in alert.annotations["description"]
    assert "nvidia_peermem" in alert.annotations["description"]
    assert alert.value is not None and alert.value < 0.7
    assert not host.alerts("firing", rule="PCIeBandwidthDegraded")
    with host.sessions() as s:  # the GPU itself is healthy: the scheduler still offers it
        offered = [h for h in schedulable(s, 1)[0] if h.host == host.hostname]
        verdict = {g.gpu: g.verdict for g in host_health(s, host.settings,
                                                         host.hostname).judgement.gpus}
    assert verdict[1] is Verdict.HEALTHY
    assert offered and 1 in offered[0].healthy_gpus, offered


def test_a_flapping_nic_port_is_its_own_page_not_this_one(
        sessions: sessionmaker[Session], sqlite_settings: Settings) -> None:
    """GPU1's gdr_loopback is judged degraded, sustained, but its NIC's port flaps:
    NICPortFlapping says where the fault is; this rule stays quiet (one fault, one page)."""
    host = SimHost(sessions, sqlite_settings, preset="hgx8", options=GDR)
    for _ in range(2):
        host.step(SWEEP_S, "sweep")
    host.inject(faults.NicPathSys(gpu=1))
    host.inject(faults.NicPortFlapping(nic="mlx5_1"))
    for _ in range(3):
        host.step(SWEEP_S, "sweep")
    with host.sessions() as s:
        j = host_health(s, host.settings, host.hostname).tests[(1, 1, TestName.GDR_LOOPBACK)]
    assert j.verdict is Verdict.DEGRADED and j.low_since is not None  # would page but for it
    assert set(host.firing()) == {"NICPortFlapping"}


def test_the_exported_expectation_names_the_nic_the_rule_names(
        sessions: sessionmaker[Session], sqlite_settings: Settings) -> None:
    """/metrics names each GPU's NIC as the rule does (`nic_of`: the inventory's nearest
    NIC), read as data: a basis worded otherwise changes nothing."""
    host = SimHost(sessions, sqlite_settings, preset="hgx8", options=GDR)
    host.step(SWEEP_S, "sweep")
    with host.sessions() as s:
        fabric = host_health(s, host.settings, host.hostname).fabric
        s.execute(update(JudgedTest).values(expected_basis="worded some other way"))
        exported = {r.gpu: r.nic for r in load_gdr(s)}
    inventory = {g: info.rdma.nearest_nic for g, info in fabric.gpus.items()
                 if info.rdma.nearest_nic and info.rdma.nic_rate_bps}
    assert len(inventory) == 8 and exported == inventory


def _twin(sessions: sessionmaker[Session], settings: Settings,
          *fault: faults.Fault) -> TwinHost:
    """Healthy for half an hour, then the faults, for 24 minutes (two sweeps and more)."""
    host = TwinHost(sessions, settings, preset="hgx8", tests=GDR)
    host.run(30)
    assert host.firing[30] == set()
    for f in fault:
        host.inject(f)
    host.run(24)
    return host


def test_prometheus_pages_a_slow_gpudirect_path_as_the_server_does(
        sessions: sessionmaker[Session], sqlite_settings: Settings, tmp_path: Path) -> None:
    """Minute by minute, GPU1's NIC across the sockets: the server pages GPU1 (its
    gdr_loopback judged degraded, the verdict); promtool, evaluating the twin over the
    agent's and the server's own scrapes, fires the same alert at the same minutes. And it
    is this rule that does: the same history expected without it fails."""
    host = _twin(sessions, sqlite_settings, faults.NicPathSys(gpu=1))
    with host.sessions() as s:
        health = host_health(s, host.sim.settings, host.sim.hostname)
    assert health.tests[(1, 1, TestName.GDR_LOOPBACK)].verdict is Verdict.DEGRADED
    ours = frozenset({("alertname", RULE), ("gpu", "1"), ("peer_gpu", "1"), ("nic", "mlx5_1"),
                      ("host", host.sim.hostname)})
    assert host.firing[host.steps] == {ours}, host.firing[host.steps]
    want = expected(host.firing, host.intermittent)
    assert_prometheus_agrees(host, "gdr NicPathSys", want, tmp_path)
    without = {step: alerts - {ours} for step, alerts in want.items()}
    with pytest.raises(AssertionError):
        assert_prometheus_agrees(host, "gdr without the rule", without, tmp_path)


def test_prometheus_leaves_a_slow_gpudirect_path_to_a_flapping_port_as_the_server_does(
        sessions: sessionmaker[Session], sqlite_settings: Settings, tmp_path: Path) -> None:
    host = _twin(sessions, sqlite_settings, faults.NicPathSys(gpu=1),
                 faults.NicPortFlapping(nic="mlx5_1"))
    assert {dict(a)["alertname"] for a in host.firing[host.steps]} == {"NICPortFlapping"}
    assert_prometheus_agrees(host, "gdr flapping", expected(host.firing, host.intermittent),
                             tmp_path)
