"""Judge a host and store the result: the one place verdicts are made for readers.

`judge_and_store` runs under the host's evaluation lock (`app/judging/transaction.py`), so two
replicas never judge one host at once. It reuses the stored (pair, test) verdicts unless a
sweep arrived since they were judged (only a sweep changes them), writes only the rows whose
verdict, reason or figures changed, and keeps each object's `since` while its verdict holds.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import and_, bindparam, delete, insert
from sqlalchemy.orm import Session

from app.analysis.health import TestJudgement
from app.analysis.verdict import Verdict
from app.config import Settings
from app.judging.judge import Prior, judge_host_now, last_heard_at
from app.models import Host, JudgedHost
from app.queries.health import (
    KEYS,
    TABLES,
    HostHealth,
    StoredRows,
    stored_rows,
    tests_from_rows,
)
from app.services.fleet_peers import peers_changed_since
from probes.report import TestName

Rows = dict[tuple, dict[str, Any]]


def _iso(at: datetime | None) -> str | None:
    return at.isoformat() if at else None


def _test_row(t: TestJudgement) -> dict[str, Any]:
    latest = t.latest
    return {
        "src": t.src, "dst": t.dst, "test": t.test.value, "verdict": t.verdict.value,
        "reason": t.reason, "facts": {}, "value": t.value, "value_at": t.value_at,
        "ratio_expected": t.ratio_expected,
        "ratio_baseline": t.ratio_baseline, "low_since": t.low_since, "expected": t.expected,
        "expected_basis": t.expected_basis, "baseline": t.baseline,
        "latest_at": latest.at if latest else None,
        "latest_value": latest.value if latest else None,
        "latest_contended": latest.contended if latest else False,
        "latest_foreign_bytes": latest.foreign_bytes if latest else 0,
        "latest_error": latest.error if latest else None,
    }


def _worst_pair(health: HostHealth) -> TestJudgement | None:
    judged = [t for t in health.tests.values()
              if t.ratio_expected is not None and t.src != t.dst]  # pairs, not per-GPU tests
    return min(judged, key=lambda t: t.ratio_expected or 0.0, default=None)


def _host_row(health: HostHealth) -> dict[str, Any]:
    j, worst = health.judgement, _worst_pair(health)
    return {
        "verdict": j.verdict.value, "reason": j.reason, "stale": health.stale,
        "facts": {"fabric": list(j.fabric), "last_sweep_at": _iso(health.host.last_sweep_at),
                  "inventory_changed_at": _iso(health.host.inventory_changed_at),
                  "error_total": health.host.error_total, "peers": health.peers},
        "gpus_total": len(j.gpus),
        "gpus_healthy": sum(1 for g in j.gpus if g.verdict is Verdict.HEALTHY),
        "worst_src": worst.src if worst else None, "worst_dst": worst.dst if worst else None,
        "worst_test": worst.test.value if worst else None,
        "worst_ratio": round(worst.ratio_expected or 0.0, 4) if worst else None,
    }


def rows_of(health: HostHealth) -> StoredRows:
    """The judged state as row values (no host id, `since` or `judged_at`), by kind and key."""
    j = health.judgement

    def plain(verdict: Verdict, reason: str, **key: Any) -> dict[str, Any]:
        return {**key, "verdict": verdict.value, "reason": reason, "facts": {}}

    return {
        "host": {(): _host_row(health)},
        "gpu": {(g.gpu,): {**plain(g.verdict, g.reason, gpu=g.gpu),
                           "facts": {**({"fabric": list(g.fabric)} if g.fabric else {}),
                                     **health.gpu_facts.get(g.gpu, {})}}
                for g in j.gpus},
        "link": {(x.gpu, x.link): {**plain(x.verdict, x.reason, gpu=x.gpu, link=x.link),
                                   "facts": health.link_facts.get((x.gpu, x.link), {})}
                 for x in j.links},
        "pair": {(p.src, p.dst): {**plain(p.verdict, p.reason, src=p.src, dst=p.dst),
                                  "facts": health.pair_facts.get((p.src, p.dst), {})}
                 for p in j.pairs},
        "test": {(t.src, t.dst, t.test.value): _test_row(t) for t in health.tests.values()},
    }


def _changes(new: Rows, old: Rows, now: datetime,
             always: bool) -> tuple[list[tuple], list[dict[str, Any]], dict[tuple, datetime]]:
    """(keys to delete, rows to insert, since of every object) for one kind."""
    drop, put, since = [k for k in old if k not in new], [], {}
    for key, row in new.items():
        prev = old.get(key)
        held = prev is not None and prev["verdict"] == row["verdict"]
        since[key] = prev["since"] if held and prev else now
        if held and not always and prev and all(prev[c] == v for c, v in row.items()):
            continue
        if prev is not None:
            drop.append(key)
        put.append({**row, "since": since[key], "judged_at": now})
    return drop, put, since


def _write(session: Session, kind: str, host_id: int, drop: list[tuple],
           put: list[dict[str, Any]]) -> None:
    table = TABLES[kind].__table__
    keys = KEYS[kind]
    if drop:
        where = and_(table.c.host_id == bindparam("_host"),
                     *(table.c[k] == bindparam(f"_{k}") for k in keys))
        session.execute(delete(table).where(where),
                        [{"_host": host_id, **{f"_{k}": v for k, v in zip(keys, key,
                                                                           strict=True)}}
                         for key in drop])
    if put:
        session.execute(insert(table), [{**r, "host_id": host_id} for r in put])


def store(session: Session, health: HostHealth, previous: StoredRows, now: datetime) -> None:
    """Write what changed since `previous`; fill `health.since` for every object."""
    for kind, rows in rows_of(health).items():
        drop, put, since = _changes(rows, previous.get(kind, {}), now, always=kind == "host")
        _write(session, kind, health.host.id, drop, put)
        health.since.update({(kind, *key): at for key, at in since.items()})
    health.generated_at = now


def _nothing_changed(settings: Settings, row: Host, top: JudgedHost | None,
                     now: datetime) -> bool:
    """A healthy, fresh host whose sweeps, inventory, judged error counters and fleet peer
    stats are as they were when it was last judged: judging it again would store the same
    verdicts."""
    if top is None or top.verdict != Verdict.HEALTHY or top.stale:
        return False
    heard = last_heard_at(row)
    if heard is None or (now - heard).total_seconds() > settings.stale_after_s:
        return False
    facts = top.facts
    return (facts.get("last_sweep_at") == _iso(row.last_sweep_at)
            and facts.get("inventory_changed_at") == _iso(row.inventory_changed_at)
            and facts.get("error_total") == row.error_total
            and not peers_changed_since(row, facts.get("peers") or {}))


def judge_and_store(session: Session, settings: Settings, row: Host, now: datetime,
                    may_skip: bool = False) -> HostHealth | None:
    """Judge `row` at `now` and store it (the caller commits). Returns what was stored, or,
    with `may_skip`, None when nothing judged has changed (only `judged_at` moves): the
    common case of a healthy host's inventory report, which then costs two small reads."""
    if may_skip:
        top = session.get(JudgedHost, row.id)
        if _nothing_changed(settings, row, top, now):
            assert top is not None
            top.judged_at = now
            return None
    previous = stored_rows(session, row.id)
    top_row = previous["host"].get(())
    judged_sweep = top_row["facts"].get("last_sweep_at") if top_row else None
    reuse = top_row is not None and judged_sweep == _iso(row.last_sweep_at)
    prior = Prior(
        tests=tests_from_rows(previous["test"]) if reuse else None,
        low_before={(r["src"], r["dst"], TestName(r["test"])): r["low_since"]
                    for r in previous["test"].values() if r["low_since"] is not None},
        link_facts={key: r["facts"] for key, r in previous["link"].items()},
        links_down={key for key, r in previous["link"].items() if r["verdict"] == Verdict.DOWN})
    health = judge_host_now(session, settings, row, now, prior)
    store(session, health, previous, now)
    return health
