"""Faults the demo does not stage, judged once and shared: the firing alerts and the stored
non-healthy objects name the same host and GPU (a GPU that fell off the bus), staleness is
the server's clock, and a skewed probe clock is a warning, never a stale page."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy.orm import Session, sessionmaker

from peerwatch.app.alerting.settings import AlertingSettings
from peerwatch.app.analysis.verdict import Verdict
from peerwatch.app.ingest.rows import ingest
from peerwatch.app.judging.service import AlertingService
from peerwatch.app.queries.health import host_health
from peerwatch.app.queries.scheduler import schedulable
from peerwatch.app.runtime.config import Settings
from peerwatch.probes.report import Report, ReportKind
from tests.app.factory import T0, sweep


def _deliver(sessions: sessionmaker[Session], settings: Settings, service: AlertingService,
             report: Report, received_after_s: float = 5.0) -> None:
    received = report.finished_at + timedelta(seconds=received_after_s)
    with sessions() as s:
        ingest(s, report, settings, received, sent_at=report.finished_at)  # sent at once
    service.evaluate_host(report.host.hostname, received)


def _firing(sessions: sessionmaker[Session]) -> set[tuple[str, str | None]]:
    from sqlalchemy import select

    from peerwatch.app.store.tables.alerts import Alert
    with sessions() as s:
        return {(a.rule, a.labels.get("gpu")) for a in
                s.scalars(select(Alert).where(Alert.state == "firing"))}


def test_a_gpu_that_falls_off_the_bus_pages_and_its_pairs_are_unknown(
        sessions: sessionmaker[Session], sqlite_settings: Settings) -> None:
    service = AlertingService(sessions, sqlite_settings, AlertingSettings())
    _deliver(sessions, sqlite_settings, service, sweep(n=4, at=T0))
    assert _firing(sessions) == set()
    _deliver(sessions, sqlite_settings, service,
             sweep(n=3, at=T0 + timedelta(seconds=30), kind=ReportKind.INVENTORY))
    assert ("GPUMissing", "3") in _firing(sessions)
    with sessions() as s:
        health = host_health(s, sqlite_settings, "node-a")
        gpu3 = next(g for g in health.gpus if g.gpu == 3)
        assert gpu3.verdict is Verdict.DOWN
        with_3 = [p for p in health.judgement.pairs if 3 in (p.src, p.dst)]
        assert with_3 and all(p.verdict is Verdict.UNKNOWN for p in with_3)
        assert "GPU3 is missing from the newest inventory" in with_3[0].reason
        [host] = schedulable(s, 1)[0]
        assert host.healthy_gpus == [0, 1, 2]
    _deliver(sessions, sqlite_settings, service, sweep(n=4, at=T0 + timedelta(seconds=60)))
    assert ("GPUMissing", "3") not in _firing(sessions)


def test_a_skewed_probe_clock_warns_and_never_reads_stale(
        sessions: sessionmaker[Session], sqlite_settings: Settings) -> None:
    """The probe's clock is 10 min slow: every report arrives 600 s "late". The host stays
    fresh and schedulable; ProbeClockSkew fires once the skew has held for 10 min."""
    service = AlertingService(sessions, sqlite_settings, AlertingSettings())
    for i in range(23):
        kind = ReportKind.SWEEP if i == 0 else ReportKind.INVENTORY
        _deliver(sessions, sqlite_settings, service,
                 sweep(n=2, at=T0 + timedelta(seconds=30 * i), kind=kind), received_after_s=600)
    firing = _firing(sessions)
    assert ("ProbeClockSkew", None) in firing
    assert ("ProbeStale", None) not in firing
    with sessions() as s:
        health = host_health(s, sqlite_settings, "node-a")
        assert not health.stale and health.judgement.verdict is Verdict.HEALTHY
        assert health.host.clock_skew_s == 600.0  # received 600 s after its finish time


def test_a_silent_host_is_stale_after_the_one_limit(
        sessions: sessionmaker[Session], sqlite_settings: Settings) -> None:
    service = AlertingService(sessions, sqlite_settings, AlertingSettings())
    _deliver(sessions, sqlite_settings, service, sweep(n=2, at=T0))
    received = T0 + timedelta(seconds=10)
    service.evaluate_host("node-a", received + timedelta(seconds=85))
    assert _firing(sessions) == set()
    service.evaluate_host("node-a", received + timedelta(seconds=95))
    assert _firing(sessions) == {("ProbeStale", None)}
    with sessions() as s:
        assert schedulable(s, 1)[1]["node-a"].startswith("stale")


def test_how_long_a_pair_has_been_slow_is_not_capped_at_the_look_back(
        sessions: sessionmaker[Session], sqlite_settings: Settings) -> None:
    """Samples are read back 20 min (twice the sustain time); the pair has been slow for an
    hour, and its reason and `low_since` say so."""
    from peerwatch.probes.sim.faults import BandwidthFactor
    from tests.app.alerting.simhost import SimHost
    settings = sqlite_settings.model_copy(update={"health_lookback_s": 60.0})
    host = SimHost(sessions, settings)
    host.step(300, "sweep")
    host.inject(BandwidthFactor(src=0, dst=1, factor=0.5, both_directions=False))
    host.step(300, "sweep")
    slow_from = host.now()
    for _ in range(12):
        host.step(300, "sweep")
    with sessions() as s:
        from peerwatch.probes.report import TestName
        t = host_health(s, settings, "sim-a").tests[(0, 1, TestName.CE_WRITE)]
    assert t.verdict is Verdict.DEGRADED
    assert t.low_since is not None and t.low_since <= slow_from
    assert t.reason.endswith("for 60 min")


def test_a_pcie_link_downtrained_in_generation_only_is_judged_as_it_alerts(
        sessions: sessionmaker[Session], sqlite_settings: Settings) -> None:
    """Gen4 of Gen5 at full width: PCIeLinkDowntrained fires, and the GPU reads degraded
    (not healthy and handed out by the scheduler) — one judgement for both."""
    from peerwatch.probes.sim.faults import PcieDowntrained
    from tests.app.alerting.simhost import SimHost
    host = SimHost(sessions, sqlite_settings)
    host.inject(PcieDowntrained(gpu=1, gen=4, width=16))
    for _ in range(32):
        host.step(30)
    assert host.firing() == {"PCIeLinkDowntrained"}
    with sessions() as s:
        gpu1 = next(g for g in host_health(s, sqlite_settings, "sim-a").gpus if g.gpu == 1)
        assert gpu1.verdict is Verdict.DEGRADED and "Gen4 of Gen5" in gpu1.reason
        assert schedulable(s, 2)[1]["sim-a"].startswith("1 healthy GPUs of 2")
