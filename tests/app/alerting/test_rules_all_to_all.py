"""All-to-all (a2a_ce, a2a_nccl) judged on the simulated fabric, with a fake clock: each
GPU's figure against what its topology offers every GPU sending at once, in the stored
verdicts, the health answer and the AllToAllDegraded page (and its silence where another
page already says where the fault is)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest
from sqlalchemy.orm import Session, sessionmaker

from peerwatch.app.alerting.settings import AlertingSettings
from peerwatch.app.analysis.verdict import Verdict
from peerwatch.app.exposition.collector import PeerwatchCollector
from peerwatch.app.exposition.loader import load_snapshot
from peerwatch.app.queries.health import host_health
from peerwatch.app.queries.health_view import health_view
from peerwatch.app.runtime.config import Settings
from peerwatch.probes.report import TestName
from peerwatch.probes.sim.faults import BandwidthFactor, LinksDown, TransferFails
from peerwatch.probes.sweep import SweepOptions
from tests.app.alerting.simhost import SimHost
from tests.app.metrics_helpers import promtool_check, values

SWEEP_S = 300.0
A2A = SweepOptions(tests=(TestName.CE_WRITE, TestName.A2A_CE, TestName.A2A_NCCL))


def _host(sessions: sessionmaker[Session], settings: Settings, preset: str) -> SimHost:
    return SimHost(sessions, settings, preset=preset, options=A2A)


def _a2a(host: SimHost, gpu: int) -> dict[str, object]:
    with host.sessions() as s:
        view = health_view(host_health(s, host.settings, host.hostname))
    g = next(g for g in view.gpus if g.gpu == gpu)
    return {t.test.value: t for t in g.tests if t.test.value.startswith("a2a")}


def test_on_nvswitch_each_gpu_sends_near_its_full_nvlink_bandwidth(
        sessions: sessionmaker[Session], sqlite_settings: Settings) -> None:
    host = _host(sessions, sqlite_settings, "hgx8")
    host.step(SWEEP_S, "sweep")
    for gpu in range(8):
        by_test = _a2a(host, gpu)
        assert set(by_test) == {"a2a_ce", "a2a_nccl"}
        ce = by_test["a2a_ce"]
        assert ce.verdict is Verdict.HEALTHY, ce  # type: ignore[attr-defined]
        assert 0.95 < (ce.ratio_expected or 0) < 1.05  # type: ignore[attr-defined]
        # 18 links x 26.6 GB/s = 478 GB/s a GPU; all-to-all reaches 0.75 of it at once
        assert 340e9 < (ce.value or 0) < 380e9  # type: ignore[attr-defined]
        assert "7 peers at once" in (ce.expected_basis or "")  # type: ignore[attr-defined]
    assert "AllToAllDegraded" not in host.firing()


def test_on_pcie_the_shared_links_are_contended_and_that_is_healthy(
        sessions: sessionmaker[Session], sqlite_settings: Settings) -> None:
    """pcie4: one PCIe link carries a GPU's three flows each way: it sends at its link's
    share, far below one pair's copy, and that is what the topology offers."""
    host = _host(sessions, sqlite_settings, "pcie4")
    host.step(SWEEP_S, "sweep")
    report = host.sweep()
    pair = max(r.value or 0 for r in report.results if r.test is TestName.CE_WRITE)
    for gpu in range(4):
        ce = _a2a(host, gpu)["a2a_ce"]
        assert ce.verdict is Verdict.HEALTHY  # type: ignore[attr-defined]
        assert (ce.value or 0) < 0.9 * pair  # type: ignore[attr-defined]
        assert "shared" in (ce.expected_basis or "")  # type: ignore[attr-defined]


def test_a_gpu_slow_only_under_all_to_all_is_paged(
        sessions: sessionmaker[Session], sqlite_settings: Settings) -> None:
    """GPU0->GPU1 carries 0.4 of its rate and no pair test runs (a host probed with the
    all-to-all only): the a2a of GPU0 (its sends) and of GPU1 under NCCL (its receives)
    are judged degraded, the others healthy, and each of the two pages once."""
    host = SimHost(sessions, sqlite_settings, preset="hgx8",
                   options=SweepOptions(tests=(TestName.A2A_CE, TestName.A2A_NCCL)))
    for _ in range(3):
        host.step(SWEEP_S, "sweep")
    host.inject(BandwidthFactor(0, 1, 0.4))
    for _ in range(3):
        host.step(SWEEP_S, "sweep")
    ce0, nccl1 = _a2a(host, 0)["a2a_ce"], _a2a(host, 1)["a2a_nccl"]
    assert ce0.verdict is Verdict.DEGRADED  # type: ignore[attr-defined]
    assert nccl1.verdict is Verdict.DEGRADED  # NCCL waits on what GPU1 receives too
    assert _a2a(host, 5)["a2a_ce"].verdict is Verdict.HEALTHY  # type: ignore[attr-defined]
    active = host.active()["AllToAllDegraded"]
    assert active == {(("gpu", "0"), ("host", "sim-a")), (("gpu", "1"), ("host", "sim-a"))}
    [alert] = [a for a in host.alerts("firing") if a.labels["gpu"] == "0"]
    assert alert.annotations["summary"].startswith("GPU0 on sim-a: all-to-all is slow")
    assert alert.value is not None and 0.3 < alert.value < 0.5


def test_a_fault_the_pair_tests_see_is_their_page_not_this_one(
        sessions: sessionmaker[Session], sqlite_settings: Settings) -> None:
    host = _host(sessions, sqlite_settings, "hgx8")
    for _ in range(3):
        host.step(SWEEP_S, "sweep")
    host.inject(LinksDown(gpu=3, count=9))
    for _ in range(3):
        host.step(SWEEP_S, "sweep")
    assert _a2a(host, 3)["a2a_ce"].verdict is Verdict.DEGRADED  # type: ignore[attr-defined]
    assert "AllToAllDegraded" not in host.active()


def test_a_gpu_failing_the_all_to_all_fails_it_everywhere_and_probe_failing_pages(
        sessions: sessionmaker[Session], sqlite_settings: Settings) -> None:
    """Only the all-to-all fails: every GPU's a2a is judged down and ProbeFailing, which
    names each failed test, is the one page."""
    host = SimHost(sessions, sqlite_settings, preset="mesh4",
                   options=SweepOptions(tests=(TestName.A2A_NCCL,)))
    host.step(SWEEP_S, "sweep")
    host.inject(TransferFails(gpu=2, test=TestName.A2A_NCCL, message="NCCL error: unhandled "
                              "cuda error (simulated)"))
    for _ in range(3):
        host.step(SWEEP_S, "sweep")
    for gpu in range(4):
        assert _a2a(host, gpu)["a2a_nccl"].verdict is Verdict.DOWN  # type: ignore[attr-defined]
    assert set(host.firing()) == {"ProbeFailing"}
    [alert] = host.alerts("firing")
    assert ("a2a_nccl GPU0: TransferError: a2a_nccl gpus=0,1,2,3: NCCL error: unhandled cuda"
            in alert.annotations["description"])


def test_metrics_export_each_gpus_all_to_all_against_its_topology(
        sessions: sessionmaker[Session], sqlite_settings: Settings) -> None:
    host = _host(sessions, sqlite_settings, "hgx8")
    host.step(SWEEP_S, "sweep")
    host.inject(BandwidthFactor(2, 3, 0.3, both_directions=False))
    host.step(SWEEP_S, "sweep")
    registry = CollectorRegistry()
    with host.sessions() as s:
        snapshot = load_snapshot(s)
    registry.register(PeerwatchCollector(lambda gpus: snapshot, AlertingSettings()))
    text = generate_latest(registry).decode()
    assert promtool_check(text) == ""
    got = values(text)

    def ratio(gpu: int, test: str) -> float:
        key = frozenset({("host", "sim-a"), ("gpu", str(gpu)), ("test", test)})
        return got[("peerwatch_gpu_all_to_all_ratio", key)]

    assert 0.9 < ratio(0, "a2a_ce") < 1.1 and 0.9 < ratio(1, "a2a_nccl") < 1.1
    assert ratio(2, "a2a_ce") < 0.6  # its flow to GPU3 carries 0.3 of its rate
    assert {n for n, _ in got} >= {"peerwatch_gpu_all_to_all_bytes_per_second",
                                   "peerwatch_gpu_all_to_all_expected_bytes_per_second"}
