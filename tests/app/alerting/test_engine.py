"""The engine on both backends: replica safety, `for` overrides, pruning."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from peerwatch.app.alerting.context import HostContext
from peerwatch.app.alerting.rule import Finding, Rule
from peerwatch.app.alerting.rules import RULES
from peerwatch.app.alerting.settings import AlertingSettings
from peerwatch.app.judging.service import AlertingService
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.tables.alerts import Alert, AlertEvent
from peerwatch.probes.sim.faults import LinksDown
from tests.app.alerting.simhost import START, SimHost


def _gated(barrier: threading.Barrier) -> tuple[Rule, ...]:
    """The real rules and a last one that waits (briefly) for the other replica, so both
    reach the write at once unless the engine's lock keeps one out. Without the lock the
    PostgreSQL test fails on the unique index (checked by hand); SQLite's window is too
    short to be caught every time, so its test only shows the lock does no harm there."""

    def gate(_ctx: HostContext) -> list[Finding]:
        try:
            barrier.wait(timeout=0.5)
        except threading.BrokenBarrierError:
            pass  # the other replica is held at the lock: as it should be
        return []

    return (*RULES, Rule("Gate", "none", 0.0, gate))


def _two_replicas_evaluate(host: SimHost) -> None:
    """Two services (as two replicas would) evaluate the same host at the same moment."""
    rules = _gated(threading.Barrier(2))
    replicas = [AlertingService(host.sessions, host.settings, host.alerting, rules)
                for _ in range(2)]
    errors: list[BaseException] = []

    def run(service: AlertingService) -> None:
        try:
            service.evaluate_host(host.hostname, host.now())
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(s,)) for s in replicas]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors, errors


@pytest.mark.postgres
def test_two_replicas_on_postgresql_open_one_alert_per_instance(
        pg_sessions: sessionmaker[Session], pg_settings: Settings) -> None:
    host = SimHost(pg_sessions, pg_settings)
    host.send()
    host.inject(LinksDown(gpu=1, count=2))
    host.advance(30)
    host.send()
    _two_replicas_evaluate(host)
    host.advance(90)
    _two_replicas_evaluate(host)
    with pg_sessions() as s:
        rows = list(s.scalars(select(Alert)))
        events = list(s.scalars(select(AlertEvent.state).order_by(AlertEvent.id)))
    assert sorted(a.rule for a in rows) == ["NVLinkDown", "NVLinkDown", "NVLinkWidthReduced"]
    assert {a.state for a in rows} == {"firing"}
    assert sorted(events) == ["firing"] * 3 + ["pending"] * 3


def test_two_evaluations_in_one_sqlite_server_do_not_double(host: SimHost) -> None:
    host.send()
    host.inject(LinksDown(gpu=0, count=1))
    host.advance(30)
    host.send()
    _two_replicas_evaluate(host)
    assert len(host.alerts()) == 2


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_the_database_refuses_a_second_active_row_for_one_fingerprint(
        backend: str, request: pytest.FixtureRequest) -> None:
    sessions: sessionmaker[Session] = request.getfixturevalue(
        "sessions" if backend == "sqlite" else "pg_sessions")

    def row(state: str) -> Alert:
        return Alert(rule="NVLinkDown", fingerprint="f" * 64, host="h", labels={},
                     annotations={}, state=state, active_since=START, updated_at=START)

    with sessions() as s:
        s.add_all([row("resolved"), row("resolved"), row("firing")])  # history may repeat
        s.commit()
        s.add(row("pending"))
        with pytest.raises(IntegrityError):
            s.commit()


def test_for_durations_can_be_overridden(sessions: sessionmaker[Session],
                                         sqlite_settings: Settings) -> None:
    host = SimHost(sessions, sqlite_settings, AlertingSettings(
        alert_eval_interval_s=0, alert_for_s={"NVLinkDown": 0, "NVLinkWidthReduced": 600}))
    host.send()
    host.inject(LinksDown(gpu=0, count=1))
    host.step(30)
    assert {a.rule: a.state for a in host.alerts()} == {
        "NVLinkDown": "firing", "NVLinkWidthReduced": "pending"}


def test_old_resolved_alerts_are_pruned_with_their_history(host: SimHost) -> None:
    host.send()
    down = LinksDown(gpu=0, count=1)
    host.inject(down)
    host.step(30)
    host.step(60)
    host.clear(down)
    host.step(30)
    assert len(host.alerts("resolved")) == 2
    keep = host.alerting.alert_resolved_keep_days
    assert host.service.prune(host.now() + timedelta(days=keep - 1)) == 0
    assert host.service.prune(host.now() + timedelta(days=keep + 1)) == 2
    with host.sessions() as s:
        assert s.scalars(select(AlertEvent)).all() == []


def test_a_deleted_host_has_its_alerts_resolved(host: SimHost) -> None:
    host.send()
    host.advance(200)
    host.evaluate()
    assert host.firing() == {"ProbeStale"}
    from peerwatch.app.store.tables.inventory import Host
    with host.sessions() as s:
        s.delete(s.scalars(select(Host)).one())
        s.commit()
    host.service.evaluate_all(host.now())
    assert host.firing() == set()


def test_the_periodic_round_skips_fresh_hosts_and_catches_silent_ones(
        host: SimHost) -> None:
    """Whether a host is due is read from its stored `judged_at`, so it is the same for
    every replica: one judged it moments ago, none re-judges it; once it is due, the first
    round judges it and the other replica's round, right after, finds nothing to do."""
    from peerwatch.app.store.tables.judged import JudgedHost
    alerting = AlertingSettings(alert_eval_interval_s=30)
    replica = AlertingService(host.sessions, host.settings, alerting)
    other = AlertingService(host.sessions, host.settings, alerting)
    host.send()
    replica.evaluate_host(host.hostname, host.now())  # as after its ingest
    host.advance(20)
    assert other.evaluate_all(host.now(), only_due=True) == []  # judged 20 s ago: not due
    host.advance(180)
    replica.tick(host.now())
    assert host.firing() == {"ProbeStale"}
    with host.sessions() as s:
        judged_at = s.scalar(select(JudgedHost.judged_at))
    assert judged_at == host.now()
    assert other.evaluate_all(host.now(), only_due=True) == []
