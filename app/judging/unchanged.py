"""The fast path of a judgement: decide from stored state alone that nothing any rule reads
has changed since the host was last judged, and then only move its `judged_at`.

Most reports are a healthy host's 30-second inventory report, identical in all that is
judged to the one before (inventories are the bulk of the server's load). Judging
one again would store the same verdicts and every rule would answer as it did, when:
- the stored judgement is healthy and not stale, and the host was heard from within the
  staleness limit (no time-based verdict can move);
- no sweep, inventory change, judged error counter rise, stored Xid/SXid event or fleet
  peer change came since (the stamps ingest and the peer recompute write on the host row;
  the judged host's facts hold the values it was judged with): a new Xid riding on a
  30-second inventory report is judged at that report, not at the next sweep;
- no alert of the host is active (a pending one waits on its `for`; a firing one must
  resolve as soon as its cause is gone, its text follow the figures), and the probe's clock
  skew, the one rule input the facts do not cover, is within its limit.

Time alone moves an event's finding (its window, a critical event's hold, the look-back
ending: `app/analysis/xid_judge.py`), but only a finding that raised an alert or worsened a
verdict has anything to undo, and a host with either never takes this path: the window's
end is judged at the first report after it.

`still_judged` reads all of that in one SELECT and writes `judged_at` in one UPDATE, no ORM
objects; `nothing_changed` is the decision, pure, shared with `store.judge_and_store`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Select, Table, bindparam, exists, select, update
from sqlalchemy.orm import Session

from peerwatch.app.analysis.verdict import Verdict
from peerwatch.app.services.fleet_peers import peers_changed_since
from peerwatch.app.store.tables.alerts import ACTIVE_STATES, Alert
from peerwatch.app.store.tables.inventory import Host, last_heard_at
from peerwatch.app.store.tables.judged import JudgedHost

# core tables, not ORM entities: no identity map, no ORM compile step on the hot path
HOSTS: Table = Host.__table__  # type: ignore[assignment]
JUDGED: Table = JudgedHost.__table__  # type: ignore[assignment]
ALERTS: Table = Alert.__table__  # type: ignore[assignment]
# the host columns the decision reads (a transient Host is built from them, no session)
HOST_COLUMNS = ("id", "last_sweep_at", "inventory_changed_at", "error_total",
                "events_stored_at", "peers_changed_at", "last_received_at", "last_report_at",
                "last_refused_at", "last_heard_at")


def iso(at: datetime | None) -> str | None:
    return at.isoformat() if at else None


def nothing_changed(row: Host, verdict: str | None, stale: bool, facts: dict[str, Any],
                    now: datetime, stale_after_s: float) -> bool:
    """A healthy, fresh host whose sweeps, inventory, judged error counters, stored events
    and fleet peer stats are as they were when it was judged (`verdict`, `stale`, `facts`:
    the stored judged host): judging it again would store the same verdicts."""
    if verdict != Verdict.HEALTHY or stale:
        return False
    heard = last_heard_at(row)
    if heard is None or (now - heard).total_seconds() > stale_after_s:
        return False
    return (facts.get("last_sweep_at") == iso(row.last_sweep_at)
            and facts.get("inventory_changed_at") == iso(row.inventory_changed_at)
            and facts.get("error_total") == row.error_total
            and facts.get("events_stored_at") == iso(row.events_stored_at)
            and not peers_changed_since(row, facts.get("peers") or {}))


def rules_would_agree(alerting: bool, skew_s: float | None, skew_limit_s: float) -> bool:
    """No rule could answer differently than it did: none of the host's alerts is active,
    and its probe's clock skew is within the limit (else ProbeClockSkew must be raised)."""
    return not alerting and (skew_s is None or abs(skew_s) <= skew_limit_s)


def _decision_select() -> Select[Any]:
    hosts, judged, alerts = HOSTS.c, JUDGED.c, ALERTS.c
    alerting = exists().where(alerts.host == hosts.name, alerts.state.in_(ACTIVE_STATES))
    return (select(*(hosts[c] for c in HOST_COLUMNS), hosts.clock_skew_s, judged.verdict,
                   judged.stale, judged.facts, alerting.label("alerting"))
            .join_from(HOSTS, JUDGED, judged.host_id == hosts.id)
            .where(hosts.name == bindparam("host")))


# built once: a statement's construction cost more than its execution
DECISION = _decision_select()
MOVE_JUDGED_AT = update(JUDGED).where(JUDGED.c.host_id == bindparam("judged_host")).values(
    judged_at=bindparam("now"))


def still_judged(session: Session, host: str, now: datetime, stale_after_s: float,
                 skew_limit_s: float) -> bool:
    """Under the host's judging lock: when nothing judged changed and no rule would answer
    otherwise, move the stored judgement's `judged_at` to `now` and answer True (the caller
    commits); else write nothing and answer False (judge it in full)."""
    found = session.execute(DECISION, {"host": host}).first()
    if found is None:
        return False
    values = found._mapping
    row = Host(**{c: values[c] for c in HOST_COLUMNS})  # transient: never added to a session
    if not (rules_would_agree(bool(values["alerting"]), values["clock_skew_s"], skew_limit_s)
            and nothing_changed(row, values["verdict"], values["stale"], values["facts"] or {},
                                now, stale_after_s)):
        return False
    session.execute(MOVE_JUDGED_AT, {"judged_host": row.id, "now": now})
    return True
