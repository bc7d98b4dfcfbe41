"""RDMA NIC health end to end on a simulated host: each NIC fault is read by the probe,
stored, judged by the counters' rates (or the port's state and rate), alerted and exported
on /metrics, with the port named in words (app/analysis/nic_health.py)."""

from __future__ import annotations

import pytest
from prometheus_client.core import Metric
from sqlalchemy.orm import Session, sessionmaker

from peerwatch.app.analysis.verdict import Verdict
from peerwatch.app.exposition.loader import load_snapshot
from peerwatch.app.exposition.nics import nic_families
from peerwatch.app.queries.health import host_health
from peerwatch.app.queries.hosts import host_detail
from peerwatch.app.queries.scheduler import schedulable
from peerwatch.app.runtime.config import Settings
from peerwatch.probes.report import ReportKind, TestName
from peerwatch.probes.sim import faults
from peerwatch.probes.sweep import SweepOptions
from tests.app.alerting.simhost import SimHost

CASES = [  # fault, rule, kind, verdict, words in the port's reason
    (faults.NicPortFlapping(nic="mlx5_1", every_s=60), "NICPortFlapping", "flap",
     Verdict.DEGRADED, "link_downed"),
    (faults.NicSymbolErrors(nic="mlx5_1", per_second=5.0), "NICLinkErrorsRising",
     "link_errors", Verdict.DEGRADED, "symbol_error"),
    (faults.NicPortDown(nic="mlx5_1"), "NICPortDown", "down", Verdict.DOWN, "Polling"),
    (faults.NicRateDegraded(nic="mlx5_1", gbps=200), "NICRateDegraded", "rate",
     Verdict.DEGRADED, "200 Gb/s, below the 400 Gb/s"),
]


def _samples(families: list[Metric], name: str) -> dict[tuple[str, ...], float]:
    family = next(f for f in families if f.name == name)
    return {tuple(s.labels.values()): s.value for s in family.samples}


@pytest.mark.parametrize("case", CASES, ids=lambda c: type(c[0]).__name__)
def test_a_nic_fault_is_judged_alerted_and_exported(
        sessions: sessionmaker[Session], sqlite_settings: Settings,
        case: tuple[faults.Fault, str, str, Verdict, str]) -> None:
    fault, rule, kind, verdict, words = case
    host = SimHost(sessions, sqlite_settings, preset="hgx8", hostname="nic-a")
    for _ in range(2):
        host.step(300, "sweep")
    with host.sessions() as s:
        healthy = host_health(s, host.settings, host.hostname)
    assert [p["verdict"] for p in healthy.nics] == ["healthy"] * 8, healthy.nics
    assert not host.alerts("pending") + host.alerts("firing")
    host.inject(fault)
    for _ in range(4):
        host.step(30)
    with host.sessions() as s:
        health = host_health(s, host.settings, host.hostname)
        snapshot = load_snapshot(s)
        detail = host_detail(s, host.hostname)
        offered = [h for h in schedulable(s, 1)[0] if h.host == host.hostname]
    shown = {n.name: n for n in detail.nics}  # the host page's NIC table
    assert len(shown) == 8 and shown["mlx5_1"].ports[0].verdict == verdict.value
    assert shown["mlx5_1"].hca_type == "MT4129" and shown["mlx5_1"].gpu_paths[1] == "PIX"
    assert [(n.nic, n.verdict) for h in offered for n in h.unhealthy_nics] == [
        ("mlx5_1", verdict.value)]  # the scheduler names it, and still offers the GPUs
    assert offered and len(offered[0].healthy_gpus) == 8
    ports = {p["nic"]: p for p in health.nics}
    bad = ports["mlx5_1"]
    assert bad["verdict"] == verdict.value and words in bad["reason"], bad["reason"]
    assert all(p["verdict"] == "healthy" for n, p in ports.items() if n != "mlx5_1")
    pages = {(a.rule, a.labels.get("nic"), a.labels.get("kind"))
             for a in host.alerts("pending") + host.alerts("firing")}
    assert pages == {(rule, "mlx5_1", kind)}, pages
    families = list(nic_families([h for h in snapshot.hosts if h.host == host.hostname]))
    problems = _samples(families, "peerwatch_nic_port_problem")
    assert problems == {("nic-a", "mlx5_1", "1", kind): 1}, problems
    assert _samples(families, "peerwatch_nic_port_up")[("nic-a", "mlx5_0", "1")] == 1


def test_a_gpu_whose_nic_is_across_the_sockets_reads_sys(
        sessions: sessionmaker[Session], sqlite_settings: Settings) -> None:
    """NicPathSys: the GPU's nearest NIC reads SYS in the NIC inventory and in its RDMA
    readiness (poor: through the CPU), and no NIC port is faulted by it."""
    host = SimHost(sessions, sqlite_settings, preset="hgx8", hostname="nic-b")
    host.inject(faults.NicPathSys(gpu=1))
    host.advance(300)
    report = host.send()
    nic = {n.name: n for n in report.inventory.nics}["mlx5_1"]
    assert nic.gpu_paths[1] == "SYS" and nic.gpu_paths[0] == "NODE"
    assert {g.index: g.rdma.nic_path for g in report.inventory.gpus}[1].value == "SYS"


def test_gpudirect_rdma_is_measured_and_judged_against_the_nics_line_rate(
        sessions: sessionmaker[Session], sqlite_settings: Settings) -> None:
    """gdr_loopback (opt-in): each GPU's memory through its nearest NIC and back, judged
    against the NIC's line rate x 0.85; a GPU whose NIC sits across the sockets (SYS)
    measures less and its test is degraded with the basis in words, while the GPU itself,
    its pairs and the PCIe alert are untouched (the NIC path's fault, not the GPU's)."""
    options = SweepOptions(tests=(TestName.CE_WRITE, TestName.GDR_LOOPBACK))
    host = SimHost(sessions, sqlite_settings, preset="hgx8", hostname="gdr-a",
                   options=options)
    for _ in range(2):
        host.step(300, "sweep")
    host.inject(faults.NicPathSys(gpu=1))
    for _ in range(3):
        host.step(300, "sweep")
    with host.sessions() as s:
        health = host_health(s, host.settings, host.hostname)
    gdr = {src: j for (src, dst, test), j in health.tests.items()
           if test == TestName.GDR_LOOPBACK}
    assert sorted(gdr) == list(range(8))
    assert gdr[0].verdict is Verdict.HEALTHY and 0.95 < (gdr[0].ratio_expected or 0) < 1.1
    assert gdr[0].expected_basis == "mlx5_0 line rate 50.0 GB/s x 0.85"
    assert gdr[1].verdict is Verdict.DEGRADED, gdr[1].reason
    assert (gdr[1].ratio_expected or 1) < 0.6 and "mlx5_1 line rate" in gdr[1].reason
    assert {g.gpu: g.verdict for g in health.judgement.gpus}[1] is Verdict.HEALTHY
    assert not host.alerts("firing", rule="PCIeBandwidthDegraded")


def test_a_host_without_nics_skips_gpudirect_with_the_reason(
        sessions: sessionmaker[Session], sqlite_settings: Settings) -> None:
    options = SweepOptions(tests=(TestName.CE_WRITE, TestName.GDR_LOOPBACK))
    host = SimHost(sessions, sqlite_settings, preset="h200x2", hostname="gdr-b",
                   options=options)
    host.advance(300)
    report = host.send(ReportKind.SWEEP)
    assert not [r for r in report.results if r.test == TestName.GDR_LOOPBACK]
    assert [e.message for e in report.errors] == [
        "skipped: no RDMA NIC near this GPU (/sys/class/infiniband shows none): GPUDirect "
        "RDMA cannot be measured here"] * 2
    assert report.schema_version == 4
