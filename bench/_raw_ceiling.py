"""The raw-driver ceiling for ingest: a report's rows inserted straight by psycopg.

The same rows an ingest of the report writes (one `reports` row, its measurements, NVLink
and GPU counter samples), built by the server's own row builders, then inserted on one
psycopg connection in one transaction per report, with no parsing, validation, inventory or
baselines: (a) a batch insert (`executemany`, which psycopg 3 pipelines), (b) `COPY`. What
the API achieves in rows/s is printed as a ratio to these.
"""

from __future__ import annotations

import statistics
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import orjson
import psycopg
from sqlalchemy.engine import make_url

from app.services import ingest as ingest_service
from probes.report import Report

TABLES = ("measurements", "link_samples", "gpu_samples")


def _plain(value: Any) -> Any:
    if isinstance(value, list | dict):
        return orjson.dumps(value).decode()
    return value


def report_rows(report: Report, host_id: int) -> dict[str, list[dict[str, Any]]]:
    """The rows of each table, with report_id left to fill in (key "report_id")."""
    links, gpus = ingest_service._sample_rows(report, host_id, 0)
    return {"measurements": ingest_service._measurement_rows(report, host_id, 0),
            "link_samples": links, "gpu_samples": gpus}


def _insert_report(cur: psycopg.Cursor[Any], host_id: int) -> int:
    now = datetime.now(UTC)
    cur.execute(
        "INSERT INTO reports (report_id, host_id, schema_version, kind, started_at, "
        "finished_at, received_at, gpu_time_s, wall_time_s, device_memory_bytes_max, "
        "agent_cpu_s, agent_rss_bytes, dropped_reports, skipped, errors) VALUES "
        "(%s, %s, 1, 'sweep', %s, %s, %s, 1, 40, 0, 1, 0, 0, '[]', '[]') RETURNING id",
        (uuid.uuid4(), host_id, now, now, now))
    row = cur.fetchone()
    assert row is not None
    return int(row[0])


def _batch(cur: psycopg.Cursor[Any], table: str, rows: list[tuple[Any, ...]],
           columns: list[str]) -> None:
    marks = ", ".join(["%s"] * len(columns))
    cur.executemany(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})", rows)


def _copy(cur: psycopg.Cursor[Any], table: str, rows: list[tuple[Any, ...]],
          columns: list[str]) -> None:
    with cur.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)


def ceiling_rows_per_s(url: str, host_id: int, report: Report, repeat: int) -> dict[str, float]:
    """Median rows/s of each raw method over `repeat` reports (one transaction each)."""
    tables = report_rows(report, host_id)
    total = 1 + sum(len(rows) for rows in tables.values())
    dsn = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    methods: dict[str, Callable[..., None]] = {"batch insert": _batch, "COPY": _copy}
    figures = {}
    with psycopg.connect(dsn) as conn:
        for name, method in methods.items():
            times = []
            for _ in range(repeat):
                t = time.perf_counter()
                with conn.transaction(), conn.cursor() as cur:
                    report_pk = _insert_report(cur, host_id)
                    for table, rows in tables.items():
                        columns = list(rows[0])
                        values = [tuple(report_pk if c == "report_id" else _plain(r[c])
                                        for c in columns) for r in rows]
                        method(cur, table, values, columns)
                times.append(time.perf_counter() - t)
            figures[name] = total / statistics.median(times)
    return figures
