"""Evaluate the rules for one host and move its alerts through their states, in the database.

    inactive --(active)--> pending --(active for `for`)--> firing --(not active)--> resolved
                              \\--(not active before `for`)--> inactive

Every change is a row in `alert_events`. One host is one unit of work — judge it, store its
state, evaluate the rules over that state (`app/judging/evaluate.py`, under the host's
lock) — in one transaction. Behind the lock a partial unique index (one pending-or-firing
row per fingerprint) makes a duplicate impossible even if the lock were bypassed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from peerwatch.app.alerting.context import HostContext
from peerwatch.app.alerting.rule import Finding, Rule
from peerwatch.app.alerting.settings import AlertingSettings
from peerwatch.app.analysis.fingerprint import fingerprint
from peerwatch.app.store.tables.alerts import ACTIVE_STATES, Alert, AlertEvent

ACTIVE = ACTIVE_STATES


@dataclass
class Outcome:
    """What one evaluation changed (for logs, tests and the notifier)."""

    host: str
    pending: list[int] = field(default_factory=list)
    fired: list[int] = field(default_factory=list)
    resolved: list[int] = field(default_factory=list)
    cleared: list[int] = field(default_factory=list)  # pending that went away


def for_seconds(rule: Rule, alerting: AlertingSettings) -> float:
    return float(alerting.alert_for_s.get(rule.name, rule.for_s))


def findings_of(ctx: HostContext, rules: Sequence[Rule]
              ) -> dict[str, tuple[Rule, Finding, dict[str, str]]]:
    found = {}
    for rule in rules:
        for finding in rule.check(ctx):
            labels = rule.labels(finding)
            found[fingerprint(labels)] = (rule, finding, labels)
    return found


def apply_findings(session: Session, host: str,
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
