"""Evaluate the rules for one host and move its alerts through their states, in the database.

    inactive --(active)--> pending --(active for `for`)--> firing --(not active)--> resolved
                              \\--(not active before `for`)--> inactive

Every change is a row in `alert_events`. One host is one unit of work — judge it, store its
state, evaluate the rules over that state — in one transaction holding a per-host lock, so
two replicas (or the ingest hook and the periodic loop of one replica) never evaluate the
same host at once:
- PostgreSQL: `pg_advisory_xact_lock(namespace, hash(host))`, released by the commit;
- SQLite (one server process): a process-wide lock around the transaction.
Behind the lock a partial unique index (one pending-or-firing row per fingerprint) makes a
duplicate impossible even if the lock were bypassed.
"""

from __future__ import annotations

import threading
import zlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import ColumnElement, or_, select, text
from sqlalchemy.orm import Session, sessionmaker

from app.alerting.context import HostContext, load_context
from app.alerting.rule import Finding, Rule, fingerprint
from app.alerting.settings import AlertingSettings
from app.config import Settings
from app.models import Alert, AlertEvent, Host, JudgedHost
from app.services.judged_store import judge_and_store

ACTIVE = ("pending", "firing")
LOCK_NAMESPACE = 0x5057  # "PW": first key of peerwatch's advisory locks
_SQLITE_LOCK = threading.RLock()


@dataclass
class Outcome:
    """What one evaluation changed (for logs, tests and the notifier)."""

    host: str
    pending: list[int] = field(default_factory=list)
    fired: list[int] = field(default_factory=list)
    resolved: list[int] = field(default_factory=list)
    cleared: list[int] = field(default_factory=list)  # pending that went away


def _lock_key(host: str) -> int:
    """crc32 of the host name as a signed 32-bit int (pg's int4 advisory key)."""
    value = zlib.crc32(host.encode())
    return value - (1 << 32) if value >= 1 << 31 else value


@contextmanager
def host_lock(session: Session, host: str) -> Iterator[None]:
    """Hold the evaluation lock of `host` until the session's transaction ends."""
    if session.get_bind().dialect.name == "postgresql":
        session.execute(text("SELECT pg_advisory_xact_lock(:ns, :key)"),
                        {"ns": LOCK_NAMESPACE, "key": _lock_key(host)})
        yield
        return
    with _SQLITE_LOCK:
        yield


def for_seconds(rule: Rule, alerting: AlertingSettings) -> float:
    return float(alerting.alert_for_s.get(rule.name, rule.for_s))


def evaluate_host(sessions: sessionmaker[Session], host: str, now: datetime,
                  settings: Settings, alerting: AlertingSettings,
                  rules: Sequence[Rule], due_before: datetime | None = None) -> Outcome:
    """Judge `host` at `now`, store its state, evaluate the rules over that state and commit
    both together: the alerts fire from exactly the verdicts every reader sees.

    `due_before` (the periodic round): do nothing when the host was judged at or after it,
    by whichever replica; checked behind the lock, so two replicas' rounds judge it once.
    """
    with sessions() as session, host_lock(session, host):
        host_row = session.scalar(select(Host).where(Host.name == host))
        findings: dict[str, tuple[Rule, Finding, dict[str, str]]] = {}
        if host_row is not None:
            if due_before is not None and _judged_since(session, host_row.id, due_before):
                return Outcome(host=host)
            pending = session.scalar(select(Alert.id).where(
                Alert.host == host, Alert.state == "pending").limit(1))
            health = judge_and_store(session, settings, host_row, now,
                                     may_skip=pending is None)
            if health is None:  # nothing judged changed and no alert waits on its `for`
                session.commit()
                return Outcome(host=host)
            ctx = load_context(session, host_row, now, settings, alerting, health)
            findings = _findings(ctx, rules)
        outcome = _apply(session, host, findings, now, alerting, {r.name for r in rules})
        session.commit()
        return outcome


def judged_after_newest_report() -> ColumnElement[bool]:
    """A host's judgement is newer than its newest report's arrival (or it never reported)."""
    return or_(Host.last_received_at.is_(None), JudgedHost.judged_at >= Host.last_received_at)


def _judged_since(session: Session, host_id: int, at: datetime) -> bool:
    """Judged at or after `at`, and after its newest report arrived: nothing to do."""
    judged = session.scalar(select(JudgedHost.judged_at).join(Host, Host.id == JudgedHost.host_id)
                            .where(JudgedHost.host_id == host_id, JudgedHost.judged_at >= at,
                                   judged_after_newest_report()))
    return judged is not None


def _findings(ctx: HostContext, rules: Sequence[Rule]
              ) -> dict[str, tuple[Rule, Finding, dict[str, str]]]:
    found = {}
    for rule in rules:
        for finding in rule.check(ctx):
            labels = rule.labels(finding)
            found[fingerprint(labels)] = (rule, finding, labels)
    return found


def _apply(session: Session, host: str,
           findings: dict[str, tuple[Rule, Finding, dict[str, str]]], now: datetime,
           alerting: AlertingSettings, rule_names: set[str]) -> Outcome:
    outcome = Outcome(host=host)
    query = select(Alert).where(Alert.host == host, Alert.state.in_(ACTIVE),
                                Alert.rule.in_(sorted(rule_names)))
    active = {a.fingerprint: a for a in session.scalars(query.with_for_update())}
    for fp, (rule, finding, labels) in findings.items():
        row = active.pop(fp, None)
        if row is None:
            row = _open(session, rule, finding, labels, fp, host, now,
                        for_seconds(rule, alerting) <= 0)
            (outcome.pending if row.state == "pending" else outcome.fired).append(row.id)
            continue
        _refresh(row, finding, now)
        held = now - row.active_since
        if row.state == "pending" and held >= timedelta(seconds=for_seconds(rule, alerting)):
            _move(session, row, "firing", now, finding.value, finding.summary)
            row.fired_at = now
            outcome.fired.append(row.id)
    for row in active.values():
        if row.state == "firing":
            _move(session, row, "resolved", now, None, "condition no longer holds")
            row.resolved_at = now
            outcome.resolved.append(row.id)
        else:
            _move(session, row, "inactive", now, None, "cleared before it fired")
            outcome.cleared.append(row.id)
    return outcome


def _open(session: Session, rule: Rule, finding: Finding, labels: dict[str, str], fp: str,
          host: str, now: datetime, fires_now: bool) -> Alert:
    row = Alert(rule=rule.name, fingerprint=fp, host=host, labels=labels,
                annotations=_annotations(finding), state="firing" if fires_now else "pending",
                active_since=now, fired_at=now if fires_now else None, value=finding.value,
                updated_at=now)
    session.add(row)
    session.flush()
    session.add(AlertEvent(alert_id=row.id, state=row.state, at=now, value=finding.value,
                           message=finding.summary))
    return row


def _refresh(row: Alert, finding: Finding, now: datetime) -> None:
    """Keep the figures current while the instance stays active (no event: not a change)."""
    row.annotations = _annotations(finding)
    row.value = finding.value
    row.updated_at = now


def _move(session: Session, row: Alert, state: str, now: datetime, value: float | None,
          message: str) -> None:
    row.state = state
    row.updated_at = now
    session.add(AlertEvent(alert_id=row.id, state=state, at=now, value=value, message=message))


def _annotations(finding: Finding) -> dict[str, str]:
    return {"summary": finding.summary, "description": finding.description,
            "dashboard": finding.dashboard}
