"""When evaluation runs: after each ingest (that host, cheap) and periodically (every host,
after recomputing the fleet's peer distributions that judging reads).

The periodic round is what lets time-based rules fire (a probe that went silent sends no
report to trigger anything) and what retries Alertmanager deliveries. It runs only in the
leading replica (`app/runtime/leadership.py`); the evaluation after an ingest runs in whichever
replica took the report, made safe by the per-host lock in `app/judging/transaction.py`.
Delivery, from either path, holds a database lock, so two replicas never send the same alert
twice.
Nothing here may break ingest: every failure is logged and left for the next round.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.orm import Session, sessionmaker

from peerwatch.app.alerting.alertmanager import AlertmanagerClient
from peerwatch.app.alerting.engine import ACTIVE, Outcome
from peerwatch.app.alerting.listening import Listening, quiet_from
from peerwatch.app.alerting.notify import Delivery, deliver
from peerwatch.app.alerting.rule import Rule
from peerwatch.app.alerting.rules import RULES
from peerwatch.app.alerting.rules_network import NETWORK_SCOPE
from peerwatch.app.alerting.settings import AlertingSettings
from peerwatch.app.judging.evaluate import evaluate_host
from peerwatch.app.judging.transaction import judged_after_newest_report
from peerwatch.app.runtime.config import Settings
from peerwatch.app.runtime.leadership import DELIVERY_LOCK, exclusive
from peerwatch.app.services.fleet_peers import Refresh, refresh_due, refresh_fleet_peers
from peerwatch.app.store.tables.alerts import Alert, AlertEvent
from peerwatch.app.store.tables.inventory import Host
from peerwatch.app.store.tables.judged import JudgedHost

log = logging.getLogger(__name__)


def wall_clock() -> datetime:
    """The server's clock, read when each host of a real round is judged."""
    return datetime.now(UTC)


class AlertingService:
    def __init__(self, sessions: sessionmaker[Session], settings: Settings,
                 alerting: AlertingSettings, rules: Sequence[Rule] = RULES,
                 listening_since: datetime | None = None) -> None:
        """`listening_since`: when the server this judges for began to take reports (None:
        unknown, no restart grace; app/alerting/listening.py)."""
        self.sessions = sessions
        self.settings = settings
        self.alerting = alerting
        self.rules = rules
        self.listening_since = listening_since
        self._listening: Listening | None = None
        self.client = (AlertmanagerClient(alerting.alertmanager_url,
                                          alerting.alertmanager_timeout_s)
                       if alerting.alertmanager_url else None)
        self._delivering = threading.Lock()
        self._deliveries: list[threading.Thread] = []  # after_ingest's, joined by close()
        self._deliveries_lock = threading.Lock()

    # ----------------------------------------------------------------- the work

    def evaluate_host(self, host: str, now: datetime | None = None,
                      due_before: datetime | None = None, rejudge: bool = False) -> Outcome:
        """`rejudge` (an operator's request): judge the (pair, test) verdicts from history,
        seeding every key's running state afresh."""
        return evaluate_host(self.sessions, host, now or datetime.now(UTC), self.settings,
                             self.alerting, self.rules, due_before, rejudge, self.listening())

    def listening(self) -> Listening | None:
        """Since when this server listened, and when the fleet's server went quiet before:
        read once (what was heard before the start never changes)."""
        if self.listening_since is None or self.alerting.probe_stale_restart_grace_s <= 0:
            return None
        if self._listening is None or self._listening.since != self.listening_since:
            with self.sessions() as session:
                quiet = quiet_from(session, self.listening_since)
            self._listening = Listening(self.listening_since, quiet,
                                        self.alerting.probe_stale_restart_grace_s)
        return self._listening

    def evaluate_all(self, now: datetime | None = None, only_due: bool = False,
                     stopping: threading.Event | None = None) -> list[Outcome]:
        """Judge and evaluate every known host, and any host that still has active alerts
        (even if deleted). Not the network's alerts (NETWORK_SCOPE): they are fleet-wide and
        move only with the network's own evaluation (judging/network.py).

        `only_due` (the periodic round) leaves out hosts judged within the last interval by
        any replica, which is every host that reports: the round's real work is the silent
        ones, whose time-based verdicts and rules (staleness) nothing else would look at —
        and any host whose newest report arrived after its judgement (a judge queue that died
        with its process, or fell behind: the stored state, not the queue, is the truth).

        Without `now` (the real round) each host is judged at the time it is judged: a round
        over a large fleet takes a while, and a judgement stamped with the round's start
        would claim to predate reports it read (and be judged again by every scan). A given
        `now` (a replay, a test's clock) judges every host at that instant. Once `stopping`
        is set no further host is begun: the process is ending, the next round has them.
        """
        given = now
        clock: Callable[[], datetime] = wall_clock if given is None else (lambda: given)
        start = clock()
        due_before = (start - timedelta(seconds=self.alerting.alert_eval_interval_s)
                      if only_due else None)
        with self.sessions() as session:
            hosts = set(session.scalars(select(Host.name)))
            hosts |= {h for h in session.scalars(
                select(Alert.host).where(Alert.state.in_(ACTIVE)).distinct()) if h}
            hosts.discard(NETWORK_SCOPE)  # no host: judging it as one gone resolved its alerts
            if due_before is not None:
                fresh = select(Host.name).join(JudgedHost, JudgedHost.host_id == Host.id) \
                    .where(JudgedHost.judged_at >= due_before, judged_after_newest_report())
                hosts -= set(session.scalars(fresh))
        outcomes = []
        for host in sorted(hosts):
            if stopping is not None and stopping.is_set():
                break
            try:  # each host at the time it is judged: a long round's hosts are not back-dated
                outcomes.append(self.evaluate_host(host, clock(), due_before))
            except Exception:  # one host's failure never stops the others
                log.exception("evaluation failed for host %s", host)
        return outcomes

    def deliver(self, now: datetime | None = None) -> Delivery | None:
        """Send what is due, unless a delivery runs now here or in another replica."""
        if self.client is None or not self._delivering.acquire(blocking=False):
            return None
        try:
            with exclusive(self.sessions.kw["bind"], DELIVERY_LOCK) as mine:
                if not mine:
                    return None
                return deliver(self.sessions, self.client, now or datetime.now(UTC),
                               self.alerting)
        finally:
            self._delivering.release()

    def prune(self, now: datetime | None = None) -> int:
        """Forget resolved and cleared alerts older than `alert_resolved_keep_days`."""
        cutoff = (now or datetime.now(UTC)) - timedelta(days=self.alerting.alert_resolved_keep_days)
        with self.sessions() as session:
            old = select(Alert.id).where(Alert.state.in_(("resolved", "inactive")),
                                         Alert.updated_at < cutoff)
            ids = list(session.scalars(old))
            if ids:
                session.execute(delete(AlertEvent).where(AlertEvent.alert_id.in_(ids)))
                session.execute(delete(Alert).where(Alert.id.in_(ids)))
                session.commit()
            return len(ids)

    # ----------------------------------------------------------------- entry points

    def after_ingest(self, host: str, due_before: datetime | None = None) -> Outcome | None:
        """Called once a report of `host` is committed: judge it, store its state, evaluate
        its alerts (`due_before`: unless judged at or after it, as the judge process asks).
        Never raises."""
        try:
            outcome = self.evaluate_host(host, due_before=due_before)
        except Exception:
            log.exception("judging after ingest failed for host %s", host)
            return None
        if self.client is not None and (outcome.fired or outcome.resolved):
            self._start_delivery()
        return outcome

    def _start_delivery(self) -> None:
        """Deliver now, off the judging thread; kept until it ends, for close() to wait on."""
        thread = threading.Thread(target=self._deliver_quietly, name="peerwatch-alert-delivery",
                                  daemon=True)
        with self._deliveries_lock:
            self._deliveries = [t for t in self._deliveries if t.is_alive()] + [thread]
            thread.start()

    def refresh_peers(self, now: datetime | None = None, only_due: bool = False
                      ) -> Refresh | None:
        """Recompute the fleet's peer distributions (docs/fleet-peers.md); `only_due` (the
        periodic round): only when older than PEERWATCH_FLEET_PEER_REFRESH_S."""
        now = now or datetime.now(UTC)
        with self.sessions() as session:
            if only_due and not refresh_due(session, self.settings, now):
                return None
            done = refresh_fleet_peers(session, self.settings, now)
            session.commit()
            return done

    def tick(self, now: datetime | None = None, stopping: threading.Event | None = None
             ) -> None:
        """One periodic round: recompute the fleet's peer stats, evaluate all hosts, deliver,
        prune. Never raises. `stopping` (the judge process's): once set, the round ends
        after the host being judged, so a stop need not wait for a whole fleet's round."""
        try:
            self.refresh_peers(now, only_due=True)
        except Exception:
            log.exception("recomputing the fleet peer stats failed")
        self.evaluate_all(now, only_due=True, stopping=stopping)
        if stopping is not None and stopping.is_set():
            return
        self._deliver_quietly(now)
        try:
            self.prune(now)
        except Exception:
            log.exception("pruning old alerts failed")

    def _deliver_quietly(self, now: datetime | None = None) -> None:
        try:
            self.deliver(now)
        except Exception:
            log.exception("alert delivery failed")

    def close(self, timeout_s: float = 30.0) -> None:
        """Wait (up to `timeout_s`) for deliveries under way, then close the client: a
        delivery's database work must not outlive the process's shutdown
        (app/judging/worker.py `_stop` says why)."""
        deadline = time.monotonic() + timeout_s
        with self._deliveries_lock:
            running = list(self._deliveries)
        for thread in running:
            thread.join(max(0.0, deadline - time.monotonic()))
        if self.client is not None:
            self.client.close()


def service_for(app: Any) -> AlertingService:
    """The app's service, made on first use from `app.state` (settings, sessionmaker).

    Tests may put an `AlertingSettings` on `app.state.alerting_settings` before first use.
    """
    state = app.state
    service: AlertingService | None = getattr(state, "alerting", None)
    if service is None:
        alerting = getattr(state, "alerting_settings", None) or AlertingSettings()
        service = AlertingService(state.sessionmaker, state.settings, alerting,
                                  listening_since=getattr(state, "listening_since", None))
        state.alerting = service
    return service


async def alerting_loop(app: Any) -> None:
    """The periodic round every `alert_eval_interval_s` (0 turns it off): one of the app's
    background jobs, started and cancelled with the others by `app.main.create_app`."""
    service = service_for(app)
    interval = service.alerting.alert_eval_interval_s
    if interval > 0:
        await _loop(app, service, interval)


def close_alerting(app: Any) -> None:
    """At shutdown: close the Alertmanager client, if the service was ever made."""
    service: AlertingService | None = getattr(app.state, "alerting", None)
    if service is not None:
        service.close()


async def _loop(app: Any, service: AlertingService, interval: float) -> None:
    while True:
        await asyncio.sleep(interval)
        if await asyncio.to_thread(app.state.leadership.held):
            await asyncio.to_thread(service.tick)
