"""Record what `peerwatch drain` did, and keep its ownership marks and breaker in step.

The breaker row exists from the first action on a scheduler: it is how a server knows it
holds peerwatch's drain state there (docs/drain.md "The breaker").

One transaction per action: the action row, the mark it creates/updates/drops, the breaker it
opens, and the alert that tells Alertmanager (`DrainBreakerOpen` while the breaker is open
in act mode; `NodeTakenOutByPeerwatch` while a node is out by peerwatch), so a controller that
restarts, or another replica, reads the same ownership and breaker. These alerts belong to no
host rule: the rule engine never resolves them; this module does (return, forget, reset).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from peerwatch.app.analysis.fingerprint import fingerprint
from peerwatch.app.schemas.drain import ActionIn, BreakerReset
from peerwatch.app.store.locks import transaction_lock
from peerwatch.app.store.tables.alerts import Alert, AlertEvent
from peerwatch.app.store.tables.drain import DrainAction, DrainBreaker, DrainMark

BREAKER_ALERT = "DrainBreakerOpen"
NODE_ALERT = "NodeTakenOutByPeerwatch"
DRAIN_ALERTS = frozenset({BREAKER_ALERT, NODE_ALERT})


def _fire(session: Session, labels: dict[str, str], host: str | None, summary: str,
          description: str, now: datetime) -> None:
    fp = fingerprint(labels)
    if session.scalar(select(Alert.id).where(Alert.fingerprint == fp,
                                             Alert.state == "firing")) is not None:
        return
    row = Alert(rule=labels["alertname"], fingerprint=fp, host=host, labels=labels,
                annotations={"summary": summary, "description": description,
                             "dashboard": f"/#/host/{host}" if host else "/"},
                state="firing", active_since=now, fired_at=now, value=1.0, updated_at=now)
    session.add(row)
    session.flush()
    session.add(AlertEvent(alert_id=row.id, state="firing", at=now, value=1.0, message=summary))


def _resolve(session: Session, labels: dict[str, str], now: datetime, why: str) -> None:
    for row in session.scalars(select(Alert).where(Alert.fingerprint == fingerprint(labels),
                                                   Alert.state == "firing")):
        row.state, row.resolved_at, row.updated_at = "resolved", now, now
        session.add(AlertEvent(alert_id=row.id, state="resolved", at=now, value=None,
                               message=why))


def _node_labels(host: str, scheduler: str) -> dict[str, str]:
    return {"alertname": NODE_ALERT, "severity": "warning", "host": host,
            "scheduler": scheduler}


def _breaker_labels(scheduler: str) -> dict[str, str]:
    return {"alertname": BREAKER_ALERT, "severity": "critical", "scheduler": scheduler}


def _mark(session: Session, scheduler: str, host: str) -> DrainMark | None:
    """The node's mark as stored now, not as this session first loaded it."""
    return session.scalar(select(DrainMark).where(DrainMark.scheduler == scheduler,
                                                  DrainMark.host == host)
                          .execution_options(populate_existing=True))


def _take_out(session: Session, a: DrainAction, now: datetime) -> None:
    host = str(a.host)
    mark = _mark(session, a.scheduler, host) or DrainMark(scheduler=a.scheduler, host=host)
    mark.taken_out_at, mark.reason, mark.applied = a.at, a.reason, a.mode == "act"
    mark.clear_since, mark.action_id = None, a.id
    session.add(mark)
    if mark.applied:
        _fire(session, _node_labels(host, a.scheduler), host,
              f"{host} taken out of {a.scheduler} by peerwatch", a.reason, now)


def _drop(session: Session, a: DrainAction, now: datetime) -> None:
    session.execute(delete(DrainMark).where(DrainMark.scheduler == a.scheduler,
                                            DrainMark.host == a.host))
    _resolve(session, _node_labels(str(a.host), a.scheduler), now, f"{a.kind}: {a.reason}")


def _clear_since(session: Session, a: DrainAction, value: datetime | None) -> None:
    mark = _mark(session, a.scheduler, str(a.host))
    if mark is not None:
        mark.clear_since = value


def _breaker_row(session: Session, scheduler: str, mode: str) -> DrainBreaker:
    """The scheduler's breaker, created closed by its first action: from then on the server
    knows it holds peerwatch's drain state for that scheduler (a server without the row while
    the scheduler shows nodes out by peerwatch lost that state: the controller fails closed)."""
    row = session.get(DrainBreaker, scheduler)
    if row is None:
        row = DrainBreaker(scheduler=scheduler, open=False, mode=mode, reason="")
        session.add(row)
    return row


def _trip(session: Session, a: DrainAction, now: datetime) -> None:
    row = _breaker_row(session, a.scheduler, a.mode)
    row.open, row.mode, row.opened_at, row.reason = True, a.mode, a.at, a.reason
    row.reset_by = row.reset_at = None
    row.cause = "state_lost" if a.details.get("cause") == "state_lost" else "limit"
    if a.mode == "act" or row.cause == "state_lost":  # a lost state pages in any mode
        _fire(session, _breaker_labels(a.scheduler), None,
              f"peerwatch drain's breaker for {a.scheduler} is open: no node is taken out "
              "until a person resets it", a.reason, now)


def _repeated_take_out(session: Session, body: ActionIn) -> DrainAction | None:
    """The take-out already recorded for this node (overlapping rounds, e.g. two health
    checks, both took it out): answered again, not counted twice against the breaker."""
    mark = _mark(session, body.scheduler, str(body.host))
    if mark is None or mark.applied != (body.mode == "act") or mark.action_id is None:
        return None
    return session.get(DrainAction, mark.action_id)


def record_action(session: Session, body: ActionIn, now: datetime) -> DrainAction:
    """Store the action and apply what it means to marks, breaker and alerts. One record per
    scheduler at a time (`store/locks.py`), each reading the marks after the one before it
    committed: two overlapping rounds' take-outs of a node (two replicas' health checks, a
    controller beside a node's own) then count once, where both had read no mark before."""
    if body.kind not in ("breaker_trip", "breaker_reset") and not body.host:
        raise ValueError(f"a {body.kind} action names its host")
    with transaction_lock(session, drain_lock(body.scheduler)):
        if body.kind == "take_out":
            again = _repeated_take_out(session, body)
            if again is not None:
                session.commit()  # ends the transaction and its lock
                return again
        action = DrainAction(at=now, host=body.host, scheduler=body.scheduler, kind=body.kind,
                             mode=body.mode, reason=body.reason, actor=body.actor,
                             details=body.details)
        session.add(action)
        session.flush()
        _breaker_row(session, body.scheduler, body.mode)
        if body.kind in ("take_out", "adopt"):
            _take_out(session, action, now)
        elif body.kind in ("return", "forget"):
            _drop(session, action, now)
        elif body.kind in ("recovering", "relapsed"):
            _clear_since(session, action, now if body.kind == "recovering" else None)
        elif body.kind == "breaker_trip":
            _trip(session, action, now)
        session.commit()
    return action


def drain_lock(scheduler: str) -> str:
    """The name of a scheduler's drain-record lock (no host name has a colon)."""
    return f"drain:{scheduler}"


def reset_breaker(session: Session, body: BreakerReset, now: datetime) -> DrainAction:
    """A person closes the breaker; recorded as an action, its alert resolved."""
    with transaction_lock(session, drain_lock(body.scheduler)):
        row = session.get(DrainBreaker, body.scheduler, populate_existing=True)
        was, cause = bool(row and row.open), row.cause if row and row.open else None
        row = row or _breaker_row(session, body.scheduler, "act")  # a person's word: known
        row.open, row.reset_by, row.reset_at, row.cause = False, body.by, now, None
        action = DrainAction(at=now, host=None, scheduler=body.scheduler, kind="breaker_reset",
                             mode=row.mode, actor=body.by,
                             reason=body.comment or ("reset" if was else "reset (was not open)"),
                             details={"was_open": was, **({"cause": cause} if cause else {})})
        session.add(action)
        _resolve(session, _breaker_labels(body.scheduler), now, f"reset by {body.by}")
        session.commit()
    return action
