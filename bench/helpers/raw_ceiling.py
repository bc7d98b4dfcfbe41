"""The raw-driver ceiling for ingest: a report's rows inserted straight by psycopg.

The same rows an ingest of the report writes (one `reports` row, its measurements, NVLink
and GPU counter samples), built by the server's own row builders, then inserted on one
psycopg connection in one transaction per report, with no parsing, validation, inventory or
baselines: (a) a batch insert (`executemany`, which psycopg 3 pipelines), (b) `COPY`. What
the API achieves in rows/s is printed as a ratio to these.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import orjson
import psycopg
from sqlalchemy import create_engine
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session

import peerwatch.app.ingest.rows as ingest_service
from peerwatch.probes.report import Report

TABLES = ("measurements", "link_samples", "gpu_samples")


def _plain(value: Any) -> Any:
    if isinstance(value, list | dict):
        return orjson.dumps(value).decode()
    return value


def report_rows(session: Session, report: Report,
                host_id: int) -> dict[str, list[dict[str, Any]]]:
    """The rows of each table, with report_id left to fill in (key "report_id"); the
    host's measurement keys made on the way, as the ingest makes them."""
    throttled = ingest_service.report_throttles(report)
    links, gpus = ingest_service._sample_rows(report, host_id, 0, throttled)
    measurements = ingest_service._measurement_rows(session, report, host_id, 0, throttled)
    return {"measurements": measurements, "link_samples": links, "gpu_samples": gpus}


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


class RawInserter:
    """One psycopg connection inserting a report's rows, one transaction per call."""

    METHODS: dict[str, Callable[..., None]] = {"batch insert": _batch, "COPY": _copy}

    def __init__(self, url: str, host_id: int, report: Report) -> None:
        self.host_id = host_id
        engine = create_engine(url)
        with Session(engine) as session, session.begin():
            self.tables = report_rows(session, report, host_id)
        engine.dispose()
        self.rows = 1 + sum(len(rows) for rows in self.tables.values())
        dsn = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
        self.conn = psycopg.connect(dsn)

    def seconds(self, method: str) -> float:
        """Wall seconds to insert the report's rows with `method`, committed."""
        insert_all = self.METHODS[method]
        t = time.perf_counter()
        with self.conn.transaction(), self.conn.cursor() as cur:
            report_pk = _insert_report(cur, self.host_id)
            for table, rows in self.tables.items():
                columns = list(rows[0])
                values = [tuple(report_pk if c == "report_id" else _plain(r[c])
                                for c in columns) for r in rows]
                insert_all(cur, table, values, columns)
        return time.perf_counter() - t

    def close(self) -> None:
        self.conn.close()
