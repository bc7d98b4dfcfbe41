"""The floor: the least work that stores a report and judges it, to hold the project against.

A prototype written for the benchmark only: for one report's JSON body it does
orjson parse; the report row; one COPY (PostgreSQL) / executemany (SQLite) per table of its
measurements and counter samples; the host's stored per-test state in one SELECT; the
verdict arithmetic (ratio to the expectation and the baseline, a k-of-n window of low
flags kept as a bit mask, `low_since`, a running baseline); the changed state rows in one
statement; the host row in one UPDATE; one commit. An inventory report has no results: its
state is the host's inventory fingerprint and error total, compared and written back.

It runs on a database of its own with the project's schema (the same tables and indexes)
plus its `floor_state` table, so the project's history and judgement never see its rows.
No validation, no coherence checks, no alert rules: what remains when all of that is free.
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

from peerwatch.probes.report import GPU_TESTS, LinkCounters

WINDOW, K_OF_N, LOW_BELOW, ALPHA = 6, 3, 0.8, 0.1
PER_GPU = {t.value for t in GPU_TESTS}
LINK_COLUMNS = tuple(LinkCounters.model_fields)
MEASUREMENT_COLUMNS = ("report_id", "host_id", "test", "src", "dst", "gpus", "value", "unit",
                       "samples", "bytes_per_copy", "copies", "gpu_time_s",
                       "device_memory_bytes", "verified", "contended", "foreign_bytes",
                       "error", "measured_at")
GPU_COLUMNS = ("report_id", "host_id", "at", "gpu", "pcie_replay", "utilization_pct",
               "memory_used_bytes", "compute_processes")
STATE_DDL = ("CREATE TABLE IF NOT EXISTS floor_state (host_id INTEGER, src INTEGER, "
             "dst INTEGER, test VARCHAR(16), expected DOUBLE PRECISION, "
             "baseline DOUBLE PRECISION, flags INTEGER, low_since VARCHAR(40), "
             "value DOUBLE PRECISION, PRIMARY KEY (host_id, src, dst, test))",
             "CREATE TABLE IF NOT EXISTS floor_hosts (host_id INTEGER PRIMARY KEY, "
             "fingerprint BYTEA, error_total BIGINT, last_report_at VARCHAR(40))")


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


def measurement_rows(doc: dict[str, Any], host_id: int, pk: int) -> list[tuple[Any, ...]]:
    out = []
    for r in doc["results"]:
        pair = r["test"] != "allreduce"
        dst = r["src"] if r["test"] in PER_GPU else r["dst"]  # per-GPU tests: the diagonal
        out.append((pk, host_id, r["test"], r["src"] if pair else None, dst if pair else None,
                    _json(r["gpus"]), r["value"], r["unit"], _json(r["samples"]),
                    r["bytes_per_copy"], r["copies"], r["gpu_time_s"],
                    r["device_memory_bytes"], r["verified"], r["contended"],
                    r["foreign_bytes"], r["error"], r["started_at"] or doc["started_at"]))
    return out


def sample_rows(doc: dict[str, Any], host_id: int,
                pk: int) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    links, gpus = [], []
    for c in doc["counters"]:
        links += [(pk, host_id, c["at"], *(p[k] for k in LINK_COLUMNS)) for p in c["links"]]
        activity = {a["gpu"]: a for a in c["activity"]}
        for gpu in sorted(activity):
            a = activity[gpu]
            gpus.append((pk, host_id, c["at"], gpu, c["pcie_replay"].get(str(gpu)),
                         a["utilization_pct"], a["memory_used_bytes"], a["compute_processes"]))
    return links, gpus


def judge(results: list[dict[str, Any]], state: dict[tuple[int, int, str], list[Any]],
          at: str) -> list[tuple[Any, ...]]:
    """The verdict arithmetic over the new results; the state rows to write back."""
    out = []
    for r in results:
        if r["test"] == "allreduce" or r["value"] is None or r["contended"]:
            continue
        key = (r["src"], r["src"] if r["test"] in PER_GPU else r["dst"], r["test"])
        expected, baseline, flags, low_since, _ = state.get(key) or (
            r["value"], r["value"], 0, None, None)
        reference = min(expected, baseline)
        ratio = (reference / r["value"]) if r["test"] == "latency" else r["value"] / reference
        low = ratio < LOW_BELOW
        flags = ((flags << 1) | low) & ((1 << WINDOW) - 1)
        degraded = bin(flags).count("1") >= K_OF_N
        low_since = (low_since or at) if degraded else None
        if not low:
            baseline += ALPHA * (r["value"] - baseline)
        out.append((expected, baseline, flags, low_since, r["value"], *key))
    return out


def fingerprint(doc: dict[str, Any]) -> bytes:
    return hashlib.blake2b(orjson.dumps(doc["inventory"]), digest_size=16).digest()


def error_total(doc: dict[str, Any]) -> int:
    newest = max(doc["counters"], key=lambda c: c["at"], default=None)
    if newest is None:
        return 0
    links = sum((p["replay"] or 0) + (p["recovery"] or 0) + (p["crc_flit"] or 0)
                for p in newest["links"])
    return links + sum(v or 0 for v in newest["pcie_replay"].values())


def report_row(doc: dict[str, Any], host_id: int) -> tuple[Any, ...]:
    cost = doc["cost"]
    return (doc["report_id"], host_id, doc["schema_version"], doc["kind"], doc["started_at"],
            doc["finished_at"], doc["finished_at"], cost["gpu_time_s"], cost["wall_time_s"],
            cost["device_memory_bytes_max"], cost["agent_cpu_s"], cost["agent_rss_bytes"],
            cost["dropped_reports"], _json(cost["skipped"]), _json(doc["errors"]))


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

    def _write_state(self, cur: Any, rows: list[tuple[Any, ...]]) -> None:
        """All of them in one statement: unnest of arrays on PostgreSQL, one executemany
        of a prepared upsert on SQLite."""
        if not rows:
            return
        upsert = ("ON CONFLICT (host_id, src, dst, test) DO UPDATE SET baseline = "
                  "excluded.baseline, flags = excluded.flags, low_since = excluded.low_since, "
                  "value = excluded.value")
        columns = "expected, baseline, flags, low_since, value, src, dst, test"
        if self.pg:
            cur.execute(f"INSERT INTO floor_state ({columns}, host_id) SELECT *, "
                        f"{self.host_id} FROM unnest(%s::float8[], %s::float8[], %s::int[], "
                        f"%s::text[], %s::float8[], %s::int[], %s::int[], %s::text[]) "
                        f"{upsert}", [list(c) for c in zip(*rows, strict=True)])
            return
        cur.executemany(f"INSERT INTO floor_state ({columns}, host_id) VALUES "
                        f"(?, ?, ?, ?, ?, ?, ?, ?, {self.host_id}) {upsert}", rows)

    def store(self, body: bytes) -> None:
        doc = orjson.loads(body)
        m, host = self.mark, self.host_id
        with self.transaction() as cur:
            cur.execute(f"INSERT INTO reports ({REPORT_COLUMNS}) VALUES "
                        f"({', '.join(m for _ in REPORT_COLUMNS.split(','))}) RETURNING id",
                        report_row(doc, host))
            pk = cur.fetchone()[0]
            links, gpus = sample_rows(doc, host, pk)
            self._insert(cur, "measurements", MEASUREMENT_COLUMNS,
                         measurement_rows(doc, host, pk))
            self._insert(cur, "link_samples", ("report_id", "host_id", "at", *LINK_COLUMNS),
                         links)
            self._insert(cur, "gpu_samples", GPU_COLUMNS, gpus)
            if doc["results"]:
                cur.execute("SELECT src, dst, test, expected, baseline, flags, low_since, value "
                            f"FROM floor_state WHERE host_id = {m}", (host,))
                state = {(s, d, t): list(rest) for s, d, t, *rest in cur.fetchall()}
                self._write_state(cur, judge(doc["results"], state, doc["finished_at"]))
            # the host's state: what changed (inventory, error total) asks for a judgement
            cur.execute(f"UPDATE floor_hosts SET fingerprint = {m}, error_total = {m}, "
                        f"last_report_at = {m} WHERE host_id = {m} RETURNING "
                        f"fingerprint, error_total",
                        (fingerprint(doc), error_total(doc), doc["finished_at"], host))
            cur.fetchone()

    def close(self) -> None:
        self.conn.close()
