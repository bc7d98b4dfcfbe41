"""History for bench/fleet.py's read figures, and the raw-driver ceiling for its ingest ratio.

`fill_history` writes at least `min_rows` measurement rows (and their report rows) for the
fleet's hosts straight into PostgreSQL with COPY, through the same tables (and, where they
are partitioned, the same day partitions, made first by the same code the maintenance job
runs): each host gets sweeps spread evenly over the last `days` days, each sweep the 393
results of the `hgx8` template. The COPY text is made by a generator from pieces formatted
once, so Python spends ~nothing per row. Foreign keys are not re-checked row by row
(`session_replication_role = replica`): the report rows are written first in the same
transaction, so they hold by construction.

`ceiling` inserts the rows an ingest writes (a report row, then its measurements, link and
GPU samples by `executemany` in one transaction per report) straight through psycopg from
`workers` threads: what the database takes without the API in front.
"""

from __future__ import annotations

import itertools
import math
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
from sqlalchemy import create_engine

from peerwatch.app.ingest.rows import stored_pair
from peerwatch.app.store import partitions
from peerwatch.app.store.tables.history import gpus_text, key_ident
from peerwatch.probes.report import Report

CHUNK_BYTES = 4 << 20
MEASUREMENT_COLUMNS = "report_id, key_id, value, contended, foreign_bytes, error, measured_at"
REPORT_COLUMNS = ("id, report_id, host_id, schema_version, kind, started_at, finished_at, "
                  "received_at, gpu_time_s, wall_time_s, device_memory_bytes_max, "
                  "agent_cpu_s, agent_rss_bytes, dropped_reports, skipped, errors")


def libpq_url(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


def _text(value: Any) -> str:
    if value is None:
        return r"\N"
    if isinstance(value, bool):
        return "t" if value else "f"
    return str(value)


def _key_parts(template: Report) -> list[tuple[str, int | None, int | None, str]]:
    """Each result's measurement key (0036) as the ingest stores it."""
    return [(r.test.value, *stored_pair(r), gpus_text(r.gpus)) for r in template.results]


def host_key_ids(url: str, host_ids: list[int], template: Report) -> dict[int, list[int]]:
    """Each host's key id of each of `template`'s results, in its order: the keys the
    hosts have not reported yet made first, as the ingest would."""
    parts = _key_parts(template)
    rows = [(h, *p, key_ident(*p)) for h in host_ids for p in parts]
    with psycopg.connect(libpq_url(url), autocommit=True) as conn:
        conn.execute("INSERT INTO measurement_keys (host_id, test, src, dst, gpus, ident) "
                     "SELECT * FROM unnest(%s::int[], %s::text[], %s::int[], %s::int[], "
                     "%s::text[], %s::text[]) ON CONFLICT DO NOTHING",
                     [list(c) for c in zip(*rows, strict=True)])
        found = conn.execute("SELECT host_id, ident, id FROM measurement_keys WHERE "
                             "host_id = ANY(%s)", (host_ids,)).fetchall()
    by = {(h, ident): pk for h, ident, pk in found}
    return {h: [by[(h, key_ident(*p))] for p in parts] for h in host_ids}


def _measurement_middles(template: Report) -> list[str]:
    """Each result's columns from `value` to `error`, tab-separated, formatted once."""
    return ["\t".join(_text(c) for c in (r.value, r.contended, r.foreign_bytes, r.error))
            for r in template.results]


@dataclass
class History:
    rows: int
    reports: int
    seconds: float
    rows_per_s: float


def _plan(hosts: int, per_sweep: int, min_rows: int, days: float) -> tuple[int, timedelta]:
    sweeps = math.ceil(min_rows / (hosts * per_sweep))
    return sweeps, timedelta(days=days) / sweeps


def _chunks(lines: Iterator[str]) -> Iterator[bytes]:
    buf: list[str] = []
    size = 0
    for line in lines:
        buf.append(line)
        size += len(line)
        if size >= CHUNK_BYTES:
            yield "".join(buf).encode()
            buf, size = [], 0
    if buf:
        yield "".join(buf).encode()


def fill_history(url: str, host_ids: list[int], template: Report, min_rows: int,
                 days: float = 7.0) -> History:
    started = time.perf_counter()
    middles = _measurement_middles(template)
    sweeps, step = _plan(len(host_ids), len(middles), min_rows, days)
    end = datetime.now(UTC) - timedelta(minutes=30)  # older than anything the fleet posted
    times = [end - step * (sweeps - k) for k in range(sweeps)]
    first_id = _reserve_report_ids(url, len(host_ids) * sweeps)
    keys = host_key_ids(url, host_ids, template)
    engine = create_engine(url)
    with engine.begin() as conn:
        pg = conn.connection.driver_connection
        assert isinstance(pg, psycopg.Connection)
        with pg.cursor() as cur:
            cur.execute("SET LOCAL session_replication_role = replica")
            cur.execute("SET LOCAL maintenance_work_mem = '256MB'")
            _copy(cur, f"COPY reports ({REPORT_COLUMNS}) FROM STDIN",
                  _report_lines(first_id, host_ids, times))
        partitioned = partitions.is_partitioned(conn)
        have = set(partitions.days(conn, "measurements")) if partitioned else set()
        n = first_id
        for day, group in itertools.groupby(times, key=partitions.today):
            day_times = list(group)
            # A day with no partition yet is loaded into a plain table and attached: its
            # indexes are then built once, in bulk, instead of row by row.
            fresh = partitioned and day not in have
            target = partitions.partition_name("measurements", day) if fresh else "measurements"
            if fresh:
                conn.exec_driver_sql(f"CREATE TABLE {target} (LIKE measurements INCLUDING "
                                     "DEFAULTS)")
            with pg.cursor() as cur:
                _copy(cur, f"COPY {target} ({MEASUREMENT_COLUMNS}) FROM STDIN",
                      _measurement_lines(n, host_ids, day_times, middles, keys))
            if fresh:
                partitions.attach_day(conn, "measurements", day)
            n += len(day_times) * len(host_ids)
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.exec_driver_sql("ANALYZE reports")
        conn.exec_driver_sql("ANALYZE measurements")
    engine.dispose()
    seconds = time.perf_counter() - started
    rows = len(host_ids) * sweeps * len(middles)
    return History(rows, len(host_ids) * sweeps, seconds, rows / seconds)


def _reserve_report_ids(url: str, count: int) -> int:
    with psycopg.connect(libpq_url(url), autocommit=True) as conn:
        first = conn.execute("SELECT nextval('reports_id_seq')").fetchone()[0]  # type: ignore[index]
        conn.execute("SELECT setval('reports_id_seq', %s)", (first + count,))
    return int(first)


def _copy(cur: psycopg.Cursor[Any], sql: str, lines: Iterator[str]) -> None:
    with cur.copy(sql) as copy:
        for chunk in _chunks(lines):
            copy.write(chunk)


def _report_lines(first_id: int, host_ids: list[int], times: list[datetime]) -> Iterator[str]:
    n = first_id
    for when in times:  # time-major: the order a fleet writes in
        at = when.isoformat()
        for host_id in host_ids:
            yield (f"{n}\t{uuid.uuid4()}\t{host_id}\t1\tsweep\t{at}\t{at}\t{at}"
                   "\t1.0\t40.0\t0\t1.0\t0\t0\t[]\t[]\n")
            n += 1


def _measurement_lines(first_id: int, host_ids: list[int], times: list[datetime],
                       middles: list[str], keys: dict[int, list[int]]) -> Iterator[str]:
    n = first_id
    for when in times:
        suffix = f"\t{when.isoformat()}\n"
        for host_id in host_ids:
            for key_id, middle in zip(keys[host_id], middles, strict=True):
                yield f"{n}\t{key_id}\t{middle}{suffix}"
            n += 1


def _ingest_rows(template: Report, host_id: int, report_pk: int, at: datetime,
                 keys: list[int]) -> tuple[list[tuple[Any, ...]], ...]:
    measurements = [(report_pk, key_id, r.value, r.contended, r.foreign_bytes, r.error, at)
                    for key_id, r in zip(keys, template.results, strict=True)]
    links, gpus = [], []
    for sample in template.counters:
        for c in sample.links:
            links.append((host_id, at, c.gpu, c.link, c.tx_bytes, c.rx_bytes,
                          c.replay, c.recovery, c.crc_flit, c.crc_data, c.ecc_data))
        for gpu, replay in sample.pcie_replay.items():
            gpus.append((report_pk, host_id, at, gpu, replay, 0.0, 0, 0))
    return measurements, links, gpus


INSERT_REPORT = (f"INSERT INTO reports ({REPORT_COLUMNS.split(', ', 1)[1]}) VALUES "
                 "(%s, %s, 1, 'sweep', %s, %s, %s, 1.0, 40.0, 0, 1.0, 0, 0, '[]', '[]') "
                 "RETURNING id")
INSERT_MEASUREMENT = (f"INSERT INTO measurements ({MEASUREMENT_COLUMNS}) VALUES "
                      f"({', '.join(['%s'] * 7)})")
INSERT_LINK = ("INSERT INTO link_samples (host_id, at, gpu, link, tx_bytes, "
               "rx_bytes, replay, recovery, crc_flit, crc_data, ecc_data) VALUES "
               f"({', '.join(['%s'] * 11)})")
INSERT_GPU = ("INSERT INTO gpu_samples (report_id, host_id, at, gpu, pcie_replay, "
              "utilization_pct, memory_used_bytes, compute_processes) VALUES "
              f"({', '.join(['%s'] * 8)})")


@dataclass
class Ceiling:
    reports: int
    rows: int
    seconds: float

    @property
    def rows_per_s(self) -> float:
        return self.rows / self.seconds


def ceiling(url: str, host_id: int, template: Report, workers: int,
            duration_s: float) -> Ceiling:
    """Per-report transactions of the same rows, back to back from `workers` threads."""
    counts = [0] * workers
    rows_per_report = 1 + len(template.results) + sum(
        len(c.links) + len(c.pcie_replay) for c in template.counters)
    keys = host_key_ids(url, [host_id], template)[host_id]
    end = time.monotonic() + duration_s

    def work(k: int) -> None:
        with psycopg.connect(libpq_url(url)) as conn, conn.cursor() as cur:
            while time.monotonic() < end:
                at = datetime.now(UTC)
                pk = cur.execute(INSERT_REPORT, (uuid.uuid4(), host_id, at, at, at)).fetchone()
                m, links, gpus = _ingest_rows(template, host_id, pk[0], at, keys)  # type: ignore[index]
                cur.executemany(INSERT_MEASUREMENT, m)
                cur.executemany(INSERT_LINK, links)
                cur.executemany(INSERT_GPU, gpus)
                conn.commit()
                counts[k] += 1

    started = time.monotonic()
    threads = [threading.Thread(target=work, args=(k,)) for k in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.monotonic() - started
    return Ceiling(sum(counts), sum(counts) * rows_per_report, seconds)
