"""A restarted server does not page its fleet stale while the probes come back from their
backoff (app/alerting/listening.py), and still pages what was silent before it went away.

A fleet of three simulated hosts on one fake clock: `old` was silent long before the
outage, `back` and `late` were fresh when the server went quiet at t=300 s; the server is
away until t=400 s. `late` reports again at 420 s and is silent after; `back` never
returns."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from peerwatch.app.alerting.listening import Listening
from peerwatch.app.alerting.settings import AlertingSettings
from peerwatch.app.judging.service import AlertingService
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.tables.inventory import Host
from peerwatch.app.store.tables.judged import JudgedHost
from tests.app.alerting.simhost import START, SimHost

QUIET_AT, BACK_AT = 300.0, 400.0  # the server went away, and started again
GRACE = AlertingSettings(alert_eval_interval_s=0).probe_stale_restart_grace_s


def _fleet(sessions: sessionmaker[Session], settings: Settings) -> dict[str, SimHost]:
    hosts = {name: SimHost(sessions, settings, hostname=name) for name in ("old", "back", "late")}
    for name, host in hosts.items():
        host.send()
        if name != "old":
            while host.t < QUIET_AT:
                host.step(30)
    return hosts


def _at(hosts: dict[str, SimHost], t: float) -> None:
    for host in hosts.values():
        host.t = t


def _stale_paged(sessions: sessionmaker[Session]) -> set[str]:
    from peerwatch.app.store.tables.alerts import Alert
    with sessions() as s:
        return set(s.scalars(select(Alert.host).where(Alert.rule == "ProbeStale",
                                                      Alert.state == "firing")))


def _stale_verdicts(sessions: sessionmaker[Session]) -> set[str]:
    with sessions() as s:
        return set(s.scalars(select(Host.name).join(JudgedHost, JudgedHost.host_id == Host.id)
                             .where(JudgedHost.stale.is_(True))))


def test_a_restart_pages_only_what_was_silent_before_it_and_what_goes_silent_after(
        sessions: sessionmaker[Session], sqlite_settings: Settings) -> None:
    hosts = _fleet(sessions, sqlite_settings)
    before = AlertingService(sessions, sqlite_settings, hosts["old"].alerting)
    before.evaluate_all(START + timedelta(seconds=QUIET_AT))
    assert _stale_paged(sessions) == {"old"}
    restarted = AlertingService(sessions, sqlite_settings, hosts["old"].alerting,
                                listening_since=START + timedelta(seconds=BACK_AT))
    _at(hosts, 420)
    hosts["late"].send()  # back from its backoff
    restarted.evaluate_all(START + timedelta(seconds=500))
    # `back` is 200 s unheard: stale, unscheduled, but not paged; `old` keeps its page
    assert _stale_verdicts(sessions) == {"old", "back"}
    assert _stale_paged(sessions) == {"old"}
    restarted.evaluate_all(START + timedelta(seconds=BACK_AT + 120))
    # `late` was heard after the start: its silence is its own
    assert _stale_paged(sessions) == {"old", "late"}
    restarted.evaluate_all(START + timedelta(seconds=BACK_AT + GRACE))
    assert _stale_paged(sessions) == {"old", "back", "late"}


def test_without_the_start_known_every_silent_host_pages(
        sessions: sessionmaker[Session], sqlite_settings: Settings) -> None:
    """What the grace changes: the same restart judged by a service that does not know
    when its server started pages `back` at once."""
    hosts = _fleet(sessions, sqlite_settings)
    unknown = AlertingService(sessions, sqlite_settings, hosts["old"].alerting)
    unknown.evaluate_all(START + timedelta(seconds=500))
    assert _stale_paged(sessions) == {"old", "back", "late"}


def test_the_quiet_instant_is_the_newest_heard_before_the_start(
        sessions: sessionmaker[Session], sqlite_settings: Settings) -> None:
    hosts = _fleet(sessions, sqlite_settings)
    _at(hosts, 420)
    hosts["late"].send()  # heard after the start: not the instant the server went quiet
    service = AlertingService(sessions, sqlite_settings, hosts["old"].alerting,
                              listening_since=START + timedelta(seconds=BACK_AT))
    listening = service.listening()
    assert listening is not None
    assert listening.quiet_from == START + timedelta(seconds=QUIET_AT)


def test_the_grace_is_bounded_and_needs_a_fresh_host() -> None:
    since = START + timedelta(seconds=BACK_AT)
    quiet = START + timedelta(seconds=QUIET_AT)
    listening = Listening(since, quiet, grace_s=390.0)
    fresh, long_silent = quiet - timedelta(seconds=10), quiet - timedelta(seconds=91)
    assert listening.excuses(fresh, since + timedelta(seconds=389), 90.0)
    assert not listening.excuses(fresh, since + timedelta(seconds=390), 90.0)
    assert not listening.excuses(long_silent, since + timedelta(seconds=10), 90.0)
    assert not listening.excuses(since + timedelta(seconds=1), since + timedelta(seconds=200),
                                 90.0)
    assert not listening.excuses(None, since, 90.0)
    assert not Listening(since, None, 390.0).excuses(fresh, since, 90.0)  # a first start
