"""Store a host's judgement: only the rows and columns that changed, a statement or two per table.

On PostgreSQL the rows stored before that changed go in one `UPDATE ... FROM
json_to_recordset(...)` sending their keys and the columns that changed in any of them, the
new rows in one `INSERT ... ON CONFLICT DO UPDATE` (both: the rows as one JSON parameter,
their packed states beside it as one bytea); on SQLite both in one prepared upsert run per
row, in process. Rows of objects gone go in one DELETE; an object whose verdict holds keeps
its `since`. A judgement that changed nothing writes nothing but the host row's
`judged_at`."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson
from sqlalchemy import LargeBinary, Table, delete, text, tuple_
from sqlalchemy.dialects import postgresql
from sqlalchemy.orm import Session

from peerwatch.app.analysis.health import TestJudgement
from peerwatch.app.analysis.verdict import Verdict
from peerwatch.app.judging.events import stored_findings
from peerwatch.app.queries.health import KEYS, TABLES, StoredRows
from peerwatch.app.records.health import HostHealth
from peerwatch.app.store.bulk import upsert_rows_sqlite

Rows = dict[tuple, dict[str, Any]]
_POSTGRESQL = postgresql.dialect()


def _iso(at: datetime | None) -> str | None:
    return at.isoformat() if at else None


def _test_row(t: TestJudgement, state: bytes | None) -> dict[str, Any]:
    latest = t.latest
    return {
        "src": t.src, "dst": t.dst, "test": t.test._value_, "verdict": t.verdict._value_,
        "reason": t.reason, "facts": {}, "value": t.value, "value_at": t.value_at,
        "ratio_expected": t.ratio_expected,
        "ratio_baseline": t.ratio_baseline, "low_since": t.low_since, "expected": t.expected,
        "expected_basis": t.expected_basis, "baseline": t.baseline,
        "latest_at": latest.at if latest else None,
        "latest_value": latest.value if latest else None,
        "latest_contended": latest.contended if latest else False,
        "latest_foreign_bytes": latest.foreign_bytes if latest else 0,
        "latest_error": latest.error if latest else None, "state": state,
    }


def _worst_pair(health: HostHealth) -> TestJudgement | None:
    judged = [t for t in health.tests.values()
              if t.ratio_expected is not None and t.src != t.dst]  # pairs, not per-GPU tests
    return min(judged, key=lambda t: t.ratio_expected or 0.0, default=None)


def _events(health: HostHealth) -> dict[str, Any]:
    """The Xid/SXid findings /metrics exposes; no key at all when there are none."""
    found = stored_findings(health.events)
    return {"events": found} if found else {}


def _host_row(health: HostHealth) -> dict[str, Any]:
    j, worst = health.judgement, _worst_pair(health)
    return {
        "verdict": j.verdict.value, "reason": j.reason, "stale": health.stale,
        "facts": {"fabric": list(j.fabric), "last_sweep_at": _iso(health.host.last_sweep_at),
                  "inventory_changed_at": _iso(health.host.inventory_changed_at),
                  "events_stored_at": _iso(health.host.events_stored_at),
                  "error_total": health.host.error_total, "peers": health.peers,
                  "judged_report": health.judged_report, **_events(health),
                  **({"nics": health.nics} if health.nics else {})},
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
        return {**key, "verdict": verdict._value_, "reason": reason, "facts": {}}

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
        "test": {(t.src, t.dst, t.test._value_):
                 _test_row(t, health.test_states.get((t.src, t.dst, t.test)))
                 for t in health.tests.values()},
    }


@dataclass
class Changes:
    """One kind's writes: the keys gone, the rows new (`fresh`) and the rows stored before
    that changed (`changed`), as written (with `host_id`), the columns changed in any of the
    changed rows, and since of every object."""

    gone: list[tuple] = field(default_factory=list)
    fresh: list[dict[str, Any]] = field(default_factory=list)
    changed: list[dict[str, Any]] = field(default_factory=list)
    columns: set[str] = field(default_factory=set)
    since: dict[tuple, datetime] = field(default_factory=dict)


def _changes(new: Rows, old: Rows, now: datetime, always: bool, host_id: int) -> Changes:
    """What to write of one kind: rows new or changed since `old`, and the keys gone. A
    row written gets its `since`, `judged_at` and `host_id` in place (`new`'s rows are
    made for this write alone, `rows_of`: ~416 test rows a sweep, not copied)."""
    out = Changes(gone=[k for k in old if k not in new])
    columns, since = out.columns, out.since
    for key, row in new.items():
        prev = old.get(key)
        if prev is None:
            since[key] = row["since"] = row["judged_at"] = now
            row["host_id"] = host_id
            out.fresh.append(row)
            continue
        held = prev["verdict"] == row["verdict"]
        since[key] = prev["since"] if held else now
        changed = {c for c, v in row.items() if prev[c] != v}
        if not changed and held and not always:
            continue
        columns |= changed | ({"since"} if not held else set())
        row["since"], row["judged_at"], row["host_id"] = since[key], now, host_id
        out.changed.append(row)
    if out.changed:
        columns.add("judged_at")
    return out


@functools.cache
def _column_types(table: Table) -> dict[str, str]:
    """Each column's PostgreSQL type, as `json_to_recordset`'s column list names it."""
    return {c.name: c.type.compile(dialect=_POSTGRESQL) for c in table.c}


def _recordset(table: Table, rows: list[dict[str, Any]],
               names: Sequence[str]) -> tuple[str, dict[str, Any], dict[str, str]]:
    """(the FROM item `v` that reads `rows`' columns `names`, its parameters, the SQL value
    of each column): the rows as one JSON parameter that `json_to_recordset` reads, but for
    the binary columns (a judged test's packed state): their values go back to back in one
    bytea parameter, sent as it is, each row's JSON holding where its value starts and how
    long it is (`"state from"`, `"state for"`). As hex in the JSON they were twice their
    size, and parsing them was a large part of the UPDATE's backend CPU."""
    types = _column_types(table)
    binary = [c for c in names if isinstance(table.c[c].type, LargeBinary)]
    plain = [c for c in names if c not in binary]
    if binary:
        blob, at, sent = bytearray(), 1, []
        for row in rows:
            out = {c: row[c] for c in plain}
            for c in binary:
                value = row[c]
                if value is not None:
                    out[f"{c} from"], out[f"{c} for"] = at, len(value)
                    blob += value
                    at += len(value)
            sent.append(out)
    else:
        sent = [{c: row[c] for c in plain} for row in rows]
    columns = [f'"{c}" {types[c]}' for c in plain]
    columns += [f'"{c} {part}" integer' for c in binary for part in ("from", "for")]
    values = {c: f'v."{c}"' for c in plain}
    values |= {c: f'substring(CAST(:blob AS bytea) FROM v."{c} from" FOR v."{c} for")'
               for c in binary}
    params: dict[str, Any] = {
        "rows": orjson.dumps(sent, option=orjson.OPT_NON_STR_KEYS).decode()}
    if binary:
        params["blob"] = bytes(blob)
    return (f"json_to_recordset(CAST(:rows AS json)) AS v({', '.join(columns)})", params,
            values)


def _upsert_postgresql(session: Session, table: Table, keys: tuple[str, ...],
                       rows: list[dict[str, Any]], columns: set[str]) -> None:
    """One INSERT ... SELECT FROM json_to_recordset(...) ON CONFLICT DO UPDATE: all the
    rows in one parameter (`_recordset`), one statement whatever their number (psycopg's
    executemany would send one statement per row)."""
    source, params, values = _recordset(table, rows, list(rows[0]))
    names = ", ".join(f'"{c}"' for c in values)
    sets = ", ".join(f'"{c}" = EXCLUDED."{c}"' for c in sorted(columns))
    conflict = ", ".join(("host_id", *keys))
    session.execute(text(
        f"INSERT INTO {table.name} ({names}) SELECT {', '.join(values.values())} FROM "
        f"{source} ON CONFLICT ({conflict}) DO UPDATE SET {sets}"), params)


def _upsert_sqlite(session: Session, table: Table, keys: tuple[str, ...],
                   rows: list[dict[str, Any]], columns: set[str]) -> None:
    """The one prepared INSERT ... ON CONFLICT DO UPDATE, run for every row (SQLite runs
    it in process: no round trip per row), its values processed as the bulk inserts'."""
    upsert_rows_sqlite(session, table, rows, ("host_id", *keys), sorted(columns))


def _update_postgresql(session: Session, table: Table, keys: tuple[str, ...],
                       rows: list[dict[str, Any]], columns: set[str]) -> int:
    """One UPDATE ... FROM json_to_recordset(...) of the keys and the changed columns only
    (a sweep changes ~4 of a judged test's 20: its times and state), so the database
    parses a third of the JSON the upsert of whole rows would send (typed arrays instead
    cost the server more per sweep: psycopg adapts each element in Python);
    the rows it updated."""
    source, params, values = _recordset(table, rows, (*keys, *sorted(columns)))
    sets = ", ".join(f'"{c}" = {values[c]}' for c in sorted(columns))
    on = "".join(f' AND t."{k}" = v."{k}"' for k in keys)
    result = session.execute(text(
        f"UPDATE {table.name} AS t SET {sets} FROM {source} "
        f"WHERE t.host_id = :host_id{on}"), {**params, "host_id": rows[0]["host_id"]})
    return int(result.rowcount)  # type: ignore[attr-defined]


def _write(session: Session, kind: str, host_id: int, changes: Changes) -> None:
    """The rows gone in one DELETE; on PostgreSQL the changed rows in one UPDATE setting
    only the columns that changed and the new ones in one upsert (an update that missed a
    row, gone since it was read, upserts them all); SQLite upserts both. Nothing for what
    did not change."""
    table: Table = TABLES[kind].__table__
    keys = KEYS[kind]
    if changes.gone:
        cols = [table.c[k] for k in keys]
        session.execute(delete(table).where(table.c.host_id == host_id,
                                            tuple_(*cols).in_(changes.gone)))
    fresh, changed = changes.fresh, changes.changed
    if session.get_bind().dialect.name != "postgresql":
        if fresh or changed:
            _upsert_sqlite(session, table, keys, fresh + changed,
                           set(fresh[0]) - {"host_id"} if fresh else changes.columns)
        return
    if changed and _update_postgresql(session, table, keys, changed,
                                      changes.columns) < len(changed):
        fresh = fresh + changed
    if fresh:
        _upsert_postgresql(session, table, keys, fresh, set(fresh[0]) - {"host_id"})


def store(session: Session, health: HostHealth, previous: StoredRows, now: datetime) -> None:
    """Write what changed since `previous`; fill `health.since` for every object."""
    for kind, rows in rows_of(health).items():
        changes = _changes(rows, previous.get(kind, {}), now, always=kind == "host",
                           host_id=health.host.id)
        _write(session, kind, health.host.id, changes)
        health.since.update({(kind, *key): at for key, at in changes.since.items()})
    health.generated_at = now
