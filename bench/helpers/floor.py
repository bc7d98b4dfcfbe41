"""The floor: the least work that stores a report and judges it, to hold the project against.

A prototype written for the benchmark only. For one report's JSON body it does what the
project must do at the least: the same validation (the wire model from the bytes, strict,
and the same coherence checks: `parse_report`, `check_report`); the report row; one COPY
(PostgreSQL) / executemany (SQLite) per table of its measurements and counter samples; the
host's stored per-test state and stored verdicts in two SELECTs; the verdict arithmetic at
every level (`floor_verdicts.py`: each (pair, test) by a k-of-n window of low flags kept as
a bit mask, `low_since`, a running baseline; pairs, GPUs, NVLink ports, the host); the
state rows in one statement and the changed verdicts in one; the host row in one UPDATE;
one commit. An inventory report has no results: its pair and per-GPU verdicts are the
stored ones, its ports, GPUs and host are judged again.

It runs on a database of its own with the project's schema (the same tables and indexes)
plus its `floor_*` tables, so the project's history and judgement never see its rows.
No alert rules and no words: what remains when those are free.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import orjson
import psycopg
from sqlalchemy.engine import make_url

from bench.helpers import floor_verdicts as fv
from peerwatch.app.api.report_checks import check_report
from peerwatch.app.ingest.posted import parse_report
from peerwatch.app.store.tables.history import key_ident
from peerwatch.probes.report import (
    GPU_TESTS,
    JOINT_TESTS,
    NIC_TESTS,
    LinkCounters,
    Report,
    utcnow,
)

PER_GPU = {t.value for t in (*GPU_TESTS, *JOINT_TESTS, *NIC_TESTS)}  # one result per GPU
LINK_COLUMNS = tuple(LinkCounters.model_fields)
MEASUREMENT_COLUMNS = ("report_id", "key_id", "value", "contended", "foreign_bytes",
                       "error", "measured_at")
GPU_COLUMNS = ("report_id", "host_id", "at", "gpu", "pcie_replay", "utilization_pct",
               "memory_used_bytes", "compute_processes")
STATE_DDL = ("CREATE TABLE IF NOT EXISTS floor_state (host_id INTEGER, src INTEGER, "
             "dst INTEGER, test VARCHAR(16), expected DOUBLE PRECISION, "
             "baseline DOUBLE PRECISION, flags INTEGER, low_since TIMESTAMP WITH TIME ZONE, "
             "value DOUBLE PRECISION, verdict SMALLINT, PRIMARY KEY (host_id, src, dst, test))",
             "CREATE TABLE IF NOT EXISTS floor_verdicts (host_id INTEGER, kind SMALLINT, "
             "a INTEGER, b INTEGER, verdict SMALLINT, PRIMARY KEY (host_id, kind, a, b))",
             "CREATE TABLE IF NOT EXISTS floor_hosts (host_id INTEGER PRIMARY KEY, "
             "fingerprint BYTEA, error_total BIGINT, last_report_at TIMESTAMP WITH TIME ZONE)")


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


def measurement_keys(report: Report) -> list[tuple[str, Any, Any, str]]:
    """Each result's (test, src, dst, GPU set) as the key table keeps it (0036)."""
    out = []
    for r in report.results:
        test = r.test.value
        pair = test != "allreduce"
        dst = r.src if test in PER_GPU else r.dst  # per-GPU tests: the diagonal
        out.append((test, r.src if pair else None, dst if pair else None,
                    ",".join(map(str, r.gpus))))
    return out


def measurement_rows(report: Report, pk: int, ids: dict[str, int]) -> list[tuple[Any, ...]]:
    return [(pk, ids[key_ident(*key)], r.value, r.contended, r.foreign_bytes, r.error,
             r.started_at or report.started_at)
            for r, key in zip(report.results, measurement_keys(report), strict=True)]


def sample_rows(report: Report, host_id: int,
                pk: int) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    links, gpus = [], []
    for c in report.counters:
        links += [(host_id, c.at, *(getattr(p, k) for k in LINK_COLUMNS))  # no report_id
                  for p in c.links]
        activity = {a.gpu: a for a in c.activity}
        for gpu in sorted(activity):
            a = activity[gpu]
            gpus.append((pk, host_id, c.at, gpu, c.pcie_replay.get(gpu), a.utilization_pct,
                         a.memory_used_bytes, a.compute_processes))
    return links, gpus


def judge(report: Report, state: dict[tuple[int, int, str], fv.State]
          ) -> list[tuple[Any, ...]]:
    """The verdict arithmetic over the new results; the state rows to write back."""
    out = []
    at = report.finished_at
    for r in report.results:
        test = r.test.value
        if test == "allreduce":
            continue
        src, dst = r.src, r.src if test in PER_GPU else r.dst
        assert src is not None and dst is not None  # a pair or per-GPU test names them
        key = (src, dst, test)
        state[key] = fv.judge_result(test, r.value, r.contended, r.error, state.get(key), at)
        out.append((*state[key], *key))
    return out


def fingerprint(report: Report) -> bytes:
    return hashlib.blake2b(report.inventory.model_dump_json().encode(),
                           digest_size=16).digest()


def error_total(report: Report) -> int:
    newest = max(report.counters, key=lambda c: c.at, default=None)
    if newest is None:
        return 0
    links = sum((p.replay or 0) + (p.recovery or 0) + (p.crc_flit or 0)
                for p in newest.links)
    return links + sum(v or 0 for v in newest.pcie_replay.values())


def report_row(report: Report, host_id: int) -> tuple[Any, ...]:
    cost = report.cost
    return (str(report.report_id), host_id, report.schema_version, report.kind.value,
            report.started_at, report.finished_at, report.finished_at, cost.gpu_time_s,
            cost.wall_time_s, cost.device_memory_bytes_max, cost.agent_cpu_s,
            cost.agent_rss_bytes, cost.dropped_reports, _json(cost.skipped),
            _json([e.model_dump(mode="json") for e in report.errors]))


def validated(body: bytes) -> Report:
    """The report, checked as the project checks it (its wire model, its coherence)."""
    report = parse_report(body)
    problems = check_report(report, utcnow())
    if problems:
        raise ValueError(f"the floor refused a report: {problems[:3]}")
    return report


STATE_COLUMNS = ("expected", "baseline", "flags", "low_since", "value", "verdict", "src", "dst",
                 "test")
STATE_TYPES = ("float8", "float8", "int", "timestamptz", "float8", "int2", "int", "int",
               "text")
REPORT_COLUMNS = ("report_id, host_id, schema_version, kind, started_at, finished_at, "
                  "received_at, gpu_time_s, wall_time_s, device_memory_bytes_max, agent_cpu_s, "
                  "agent_rss_bytes, dropped_reports, skipped, errors")


class Floor:
    """One connection to the floor's database; `store(body)` is the whole server's work."""

    def __init__(self, url: str, hostname: str) -> None:
        self.pg = make_url(url).get_backend_name() == "postgresql"
        if self.pg:
            dsn = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
            self.conn: Any = psycopg.connect(dsn)
        else:
            self.conn = sqlite3.connect(make_url(url).database or "", isolation_level=None)
        self.mark = "%s" if self.pg else "?"
        with self.transaction() as cur:
            for ddl in STATE_DDL:
                cur.execute(ddl if self.pg else ddl.replace("BYTEA", "BLOB"))
            cur.execute(f"INSERT INTO hosts (name, fabric, first_seen) VALUES ({self.mark}, "
                        f"'floor', CURRENT_TIMESTAMP) RETURNING id", (hostname,))
            self.host_id = cur.fetchone()[0]
            cur.execute(f"INSERT INTO floor_hosts (host_id) VALUES ({self.mark})",
                        (self.host_id,))

    def backend_pid(self) -> int | None:
        """The PostgreSQL backend serving this connection (its /proc CPU is the floor's)."""
        return self.conn.info.backend_pid if self.pg else None

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        if self.pg:
            with self.conn.transaction(), self.conn.cursor() as cur:
                yield cur
            return
        cur = self.conn.cursor()
        cur.execute("BEGIN IMMEDIATE")
        try:
            yield cur
            cur.execute("COMMIT")
        except BaseException:
            cur.execute("ROLLBACK")
            raise

    def _insert(self, cur: Any, table: str, columns: Sequence[str],
                rows: list[tuple[Any, ...]]) -> None:
        if not rows:
            return
        if self.pg:
            with cur.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
            return
        marks = ", ".join("?" for _ in columns)
        cur.executemany(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})", rows)

    def _key_ids(self, cur: Any, report: Report) -> dict[str, int]:
        """ident -> id of the host's measurement keys, the report's new ones made first."""
        m, host = self.mark, self.host_id
        cur.execute(f"SELECT ident, id FROM measurement_keys WHERE host_id = {m}", (host,))
        ids = dict(cur.fetchall())
        wanted = {key_ident(*k): k for k in measurement_keys(report)}
        missing = [(host, *k, i) for i, k in wanted.items() if i not in ids]
        if missing:
            cur.executemany("INSERT INTO measurement_keys (host_id, test, src, dst, gpus, "
                            f"ident) VALUES ({', '.join(m for _ in range(6))}) "
                            "ON CONFLICT DO NOTHING", missing)
            cur.execute(f"SELECT ident, id FROM measurement_keys WHERE host_id = {m}",
                        (host,))
            ids = dict(cur.fetchall())
        return ids

    def _upsert(self, cur: Any, table: str, columns: Sequence[str], types: Sequence[str],
                keys: str, rows: list[tuple[Any, ...]]) -> None:
        """All of `rows` in one statement: unnest of arrays on PostgreSQL, one executemany
        of a prepared upsert on SQLite."""
        if not rows:
            return
        keep = [c for c in columns if c not in keys.split(", ")]
        upsert = (f"ON CONFLICT (host_id, {keys}) DO UPDATE SET "
                  + ", ".join(f"{c} = excluded.{c}" for c in keep))
        names = ", ".join(columns)
        if self.pg:
            arrays = ", ".join(f"%s::{t}[]" for t in types)
            cur.execute(f"INSERT INTO {table} ({names}, host_id) SELECT *, {self.host_id} "
                        f"FROM unnest({arrays}) {upsert}",
                        [list(c) for c in zip(*rows, strict=True)])
            return
        marks = ", ".join("?" for _ in columns)
        cur.executemany(f"INSERT INTO {table} ({names}, host_id) VALUES ({marks}, "
                        f"{self.host_id}) {upsert}", rows)

    def _judge(self, cur: Any, report: Report) -> None:
        """Every level judged; the state rows and the changed verdicts written back."""
        m, host = self.mark, self.host_id
        cur.execute(f"SELECT kind, a, b, verdict FROM floor_verdicts WHERE host_id = {m}",
                    (host,))
        stored = {(k, a, b): v for k, a, b, v in cur.fetchall()}
        tests = None
        if report.results:
            cur.execute("SELECT src, dst, test, expected, baseline, flags, low_since, value, "
                        f"verdict FROM floor_state WHERE host_id = {m}", (host,))
            state = {(s, d, t): list(rest) for s, d, t, *rest in cur.fetchall()}
            self._upsert(cur, "floor_state", STATE_COLUMNS, STATE_TYPES, "src, dst, test",
                         judge(report, state))
            tests = {key: row[5] for key, row in state.items()}
        self._upsert(cur, "floor_verdicts", ("kind", "a", "b", "verdict"),
                     ("int2", "int", "int", "int2"), "kind, a, b",
                     fv.changed(fv.levels(report, tests, stored), stored))

    def store(self, body: bytes) -> None:
        report = validated(body)
        m, host = self.mark, self.host_id
        with self.transaction() as cur:
            cur.execute(f"INSERT INTO reports ({REPORT_COLUMNS}) VALUES "
                        f"({', '.join(m for _ in REPORT_COLUMNS.split(','))}) RETURNING id",
                        report_row(report, host))
            pk = cur.fetchone()[0]
            links, gpus = sample_rows(report, host, pk)
            self._insert(cur, "measurements", MEASUREMENT_COLUMNS,
                         measurement_rows(report, pk, self._key_ids(cur, report)))
            self._insert(cur, "link_samples", ("host_id", "at", *LINK_COLUMNS),
                         links)
            self._insert(cur, "gpu_samples", GPU_COLUMNS, gpus)
            self._judge(cur, report)
            # the host's state: what changed (inventory, error total) asks for a judgement
            cur.execute(f"UPDATE floor_hosts SET fingerprint = {m}, error_total = {m}, "
                        f"last_report_at = {m} WHERE host_id = {m} RETURNING "
                        f"fingerprint, error_total",
                        (fingerprint(report), error_total(report), report.finished_at, host))
            cur.fetchone()

    def close(self) -> None:
        self.conn.close()
