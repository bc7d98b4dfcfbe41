"""One host's unit of work: judge it, store its state, evaluate the alert rules over that
state and commit both together, under the host's lock (`transaction.py`). Here, in judging,
because the judge runs the rules after judging: alerting sits below, and knows nothing of
how a host is judged.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy.orm import Session, sessionmaker

from peerwatch.app.alerting.context import load_context
from peerwatch.app.alerting.engine import Outcome, apply_findings, findings_of
from peerwatch.app.alerting.listening import Listening
from peerwatch.app.alerting.rule import Finding, Rule
from peerwatch.app.alerting.settings import AlertingSettings
from peerwatch.app.judging.transaction import judging
from peerwatch.app.runtime.config import Settings


def evaluate_host(sessions: sessionmaker[Session], host: str, now: datetime,
                  settings: Settings, alerting: AlertingSettings,
                  rules: Sequence[Rule], due_before: datetime | None = None,
                  rejudge: bool = False, listening: Listening | None = None) -> Outcome:
    """Judge `host` at `now`, store its state, evaluate the rules over that state and commit
    both together: the alerts fire from exactly the verdicts every reader sees.

    `due_before` (the periodic round): do nothing when the host was judged at or after it,
    by whichever replica; checked behind the lock, so two replicas' rounds judge it once.
    """
    with judging(sessions, host, now, settings, due_before, alerting.clock_skew_warn_s,
                 rejudge) as judged:
        if judged.current:
            return Outcome(host=host)
        if judged.unchanged:  # nothing judged changed, no rule can answer otherwise
            judged.session.commit()
            return Outcome(host=host)
        findings: dict[str, tuple[Rule, Finding, dict[str, str]]] = {}
        if judged.row is not None:
            assert judged.health is not None  # judged in full (the fast path is `unchanged`)
            ctx = load_context(judged.session, judged.row, now, settings, alerting,
                               judged.health, listening)
            findings = findings_of(ctx, rules)
        outcome = apply_findings(judged.session, host, findings, now, alerting,
                                 {r.name for r in rules})
        judged.session.commit()
        return outcome
