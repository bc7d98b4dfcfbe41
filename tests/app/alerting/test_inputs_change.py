"""Alerts and their texts follow their inputs as they change, not only at
a sweep. Fault reports are built here: a simulated host whose probe clock is set off by the
test (reports carry the probe's time, the server reads the skew at arrival), and a report
gap the test makes by not sending.

- ProbeClockSkew is raised, re-worded and resolved at the next *inventory* report of a
  healthy, unchanged host (the fast path that skips rule evaluation used to keep it firing,
  with its old words, until the next sweep);
- the alert text, the API's `clock_skew_s` and `/metrics` say the same direction and size;
- an error-growth alert survives a report gap shorter than the staleness limit.
"""

from __future__ import annotations

from datetime import timedelta

from prometheus_client import CollectorRegistry, generate_latest
from sqlalchemy.orm import Session, sessionmaker

from peerwatch.app.alerting.settings import AlertingSettings
from peerwatch.app.analysis.verdict import Verdict
from peerwatch.app.exposition.collector import PeerwatchCollector
from peerwatch.app.exposition.loader import load_snapshot
from peerwatch.app.ingest.rows import ingest
from peerwatch.app.queries.health import host_health
from peerwatch.app.queries.hosts import host_detail
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.tables.alerts import Alert
from peerwatch.probes.report import ReportKind
from peerwatch.probes.sim.faults import ErrorGrowth
from peerwatch.probes.sweep import build_report
from tests.app.alerting.simhost import SimHost
from tests.app.metrics_helpers import value


def _send(host: SimHost, kind: ReportKind, probe_off_s: float) -> None:
    """One report stamped by a probe clock `probe_off_s` ahead of the server's (negative:
    behind), sent now; the server evaluates after it, as the ingest hook does."""
    def probe_now():  # noqa: ANN202 - the probe's clock
        return host.now() + timedelta(seconds=probe_off_s)

    report = build_report(host.fabric, kind, host.options, now=probe_now)
    with host.sessions() as session:
        ingest(session, report, host.settings, host.now(), sent_at=probe_now())
    host.evaluate()


def _reports(host: SimHost, n: int, probe_off_s: float) -> None:
    for _ in range(n):
        host.advance(30)
        _send(host, ReportKind.INVENTORY, probe_off_s)


def _skew_alert(host: SimHost) -> Alert | None:
    active = [a for a in host.alerts(rule="ProbeClockSkew") if a.state in ("pending", "firing")]
    assert len(active) <= 1
    return active[0] if active else None


def _metrics_skew(host: SimHost) -> float | None:
    registry = CollectorRegistry()
    with host.sessions() as session:
        snap = load_snapshot(session)
    registry.register(PeerwatchCollector(lambda gpus: snap, AlertingSettings()))
    return value(generate_latest(registry).decode(), "peerwatch_probe_clock_skew_seconds",
                 host=host.hostname)


def _api_skew(host: SimHost) -> float | None:
    with host.sessions() as session:
        return host_detail(session, host.hostname).clock_skew_s


def _healthy(host: SimHost) -> SimHost:
    for _ in range(3):
        host.advance(300)
        _send(host, ReportKind.SWEEP, 0.0)
    with host.sessions() as session:
        verdict = host_health(session, host.settings, host.hostname).judgement.verdict
    assert verdict is Verdict.HEALTHY  # the fast path applies to this host
    return host


def test_clock_skew_is_raised_reworded_and_resolved_between_sweeps(host: SimHost) -> None:
    _healthy(host)
    _reports(host, 1, -393.0)  # the probe's clock 393 s behind: reports arrive +393 s late
    alert = _skew_alert(host)
    assert alert is not None and alert.state == "pending"  # at the first inventory report
    _reports(host, 21, -393.0)  # 10.5 min: past its 10-min `for`
    alert = _skew_alert(host)
    assert alert is not None and alert.state == "firing"
    assert alert.annotations["summary"].endswith("is 7 min behind the server's (+393 s)")
    assert _api_skew(host) == _metrics_skew(host) == 393.0

    _reports(host, 1, 300.0)  # now 300 s ahead: one inventory report, no sweep
    alert = _skew_alert(host)
    assert alert is not None and alert.state == "firing"  # still off: the same alert ...
    assert alert.annotations["summary"].endswith("is 5 min ahead of the server's (-300 s)")
    assert alert.value == -300.0  # ... with today's figures, in the API's and /metrics' sign
    assert _api_skew(host) == _metrics_skew(host) == -300.0
    assert "-300 s off" in alert.annotations["description"]
    assert "ahead of the server's" in alert.annotations["description"]

    _reports(host, 1, 0.0)  # fixed: the next inventory report resolves it
    assert _skew_alert(host) is None
    assert [a.state for a in host.alerts(rule="ProbeClockSkew")] == ["resolved"]


def test_a_skew_within_the_limit_keeps_the_fast_path_and_raises_nothing(
        host: SimHost) -> None:
    """The control: a healthy host whose clock is 20 s off (under the 60 s limit) raises no
    alert, however many inventory reports come."""
    _healthy(host)
    _reports(host, 25, -20.0)
    assert host.alerts(rule="ProbeClockSkew") == []
    assert _api_skew(host) == _metrics_skew(host) == 20.0


def _gap_host(sessions: sessionmaker[Session], settings: Settings) -> SimHost:
    return SimHost(sessions, settings.model_copy(update={"stale_after_s": 1800.0}))


def test_an_error_growth_alert_survives_a_report_gap_shorter_than_staleness(
        sessions: sessionmaker[Session], sqlite_settings: Settings) -> None:
    """A replay counter grows all along; the probe is silent for 28 min (staleness: 30 min),
    the periodic round judges the host meanwhile, then reports resume: one alert, firing
    throughout, never resolved and fired again."""
    host = _gap_host(sessions, sqlite_settings)
    _healthy(host)
    host.inject(ErrorGrowth(gpu=0, link=3, counter="replay", per_second=0.05))
    _reports(host, 4, 0.0)
    [alert] = host.alerts(rule="NVLinkErrorsIncreasing")
    assert alert.state == "firing"
    for _ in range(28):  # silent: the periodic round still judges it, every minute
        host.advance(60)
        host.service.evaluate_all(host.now())
    _reports(host, 3, 0.0)
    assert [(a.id, a.state) for a in host.alerts(rule="NVLinkErrorsIncreasing")] == [
        (alert.id, "firing")]
    assert host.history(alert.id) == ["firing"]


def test_the_growth_stops_and_the_alert_resolves_after_a_gap(
        sessions: sessionmaker[Session], sqlite_settings: Settings) -> None:
    """The control: the counter stops growing during the gap; after it the window (reaching
    back across the gap) sees no growth, and the alert resolves — once."""
    host = _gap_host(sessions, sqlite_settings)
    _healthy(host)
    fault = ErrorGrowth(gpu=0, link=3, counter="replay", per_second=0.05)
    host.inject(fault)
    _reports(host, 4, 0.0)
    host.clear(fault)
    host.advance(28 * 60)
    _reports(host, 2, 0.0)
    assert [a.state for a in host.alerts(rule="NVLinkErrorsIncreasing")] == ["resolved"]
