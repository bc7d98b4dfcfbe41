"""The network's unit of work: judge every host pair, triangulate, and move the network
alerts (app/alerting/rules_network.py) through their states, in one transaction.

Run after each pair job's results are stored (`POST /api/v1/network/results`), so an alert
resolves when newer figures clear it. Fleet-wide, so its alerts are kept under
`NETWORK_SCOPE` rather than one host.

Two ranks' results often arrive together. Each evaluation takes the network's lock (the
judging lock of `NETWORK_SCOPE`, `store/locks.py`) before it reads the figures, so
the last one to run has read every result stored before it: without it, one that read
before the other's result and wrote after it resolved the alert the fault had just fired.
A concurrent evaluation that still opens the same alert first (another database's replica
between the lock's) wins by the unique index on active fingerprints; this one retries once.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from peerwatch.app.alerting.engine import Outcome, apply_findings
from peerwatch.app.alerting.rule import Finding, Rule
from peerwatch.app.alerting.rules_network import NETWORK_RULES, NETWORK_SCOPE, network_findings
from peerwatch.app.alerting.settings import AlertingSettings
from peerwatch.app.analysis.fingerprint import fingerprint
from peerwatch.app.analysis.network import NetworkJudgement
from peerwatch.app.queries.network import network_judgement
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.locks import transaction_lock


def evaluate_network(session: Session, settings: Settings, alerting: AlertingSettings,
                     now: datetime) -> tuple[NetworkJudgement, Outcome]:
    """Judge, triangulate and apply the network rules; commits. Returns the judgement."""
    for attempt in (1, 2):
        try:
            with transaction_lock(session, NETWORK_SCOPE):
                judgement, _ = network_judgement(session, settings, now)
                outcome = _apply(session, judgement, alerting, now)
                session.commit()
            return judgement, outcome
        except IntegrityError:
            session.rollback()
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


def _apply(session: Session, judgement: NetworkJudgement, alerting: AlertingSettings,
           now: datetime) -> Outcome:
    rules = {r.name: r for r in NETWORK_RULES}
    found: dict[str, tuple[Rule, Finding, dict[str, str]]] = {}
    for name, findings in network_findings(judgement).items():
        for finding in findings:
            labels = rules[name].labels(finding)
            found[fingerprint(labels)] = (rules[name], finding, labels)
    return apply_findings(session, NETWORK_SCOPE, found, now, alerting, set(rules))
