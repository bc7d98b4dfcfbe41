"""Two real `peerwatch serve` processes on one PostgreSQL: both ingest and answer, the same
report sent to both is stored once, nothing is lost, one replica leads the periodic jobs,
and an alert that fires is notified once (a local receiver counts what reaches it)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from sqlalchemy import create_engine, text

from bench.helpers.replicas import serve_processes
from peerwatch.app.runtime.config import Settings
from peerwatch.app.runtime.leadership import DELIVERY_LOCK, Leadership, exclusive
from peerwatch.app.store.db import make_engine
from tests.app.conftest import PROBE_TOKEN, throwaway_pg_database
from tests.app.factory import sweep
from tests.conftest import SETTLE_S
from tests.threaded_server import running

HEADERS = {"Authorization": f"Bearer {PROBE_TOKEN}", "Content-Type": "application/json"}


class Receiver(ThreadingHTTPServer):
    """Stands in for Alertmanager's POST /api/v2/alerts and keeps every alert posted."""

    def __init__(self) -> None:
        self.alerts: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Handler)

    def firing(self, name: str) -> list[dict[str, Any]]:
        now = datetime.now(UTC)
        with self.lock:
            return [a for a in self.alerts if a["labels"].get("alertname") == name
                    and datetime.fromisoformat(a["endsAt"]) > now]


class _Handler(BaseHTTPRequestHandler):
    server: Receiver

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with self.server.lock:
            self.server.alerts.extend(body)
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = Receiver()
    with running(server):
        yield server


def _post(base: str, body: str) -> httpx.Response:
    return httpx.post(f"{base}/api/v1/reports", content=body, headers=HEADERS, timeout=60)


def _wait_for(check: Any, timeout_s: float = SETTLE_S) -> None:
    deadline = datetime.now(UTC) + timedelta(seconds=timeout_s)
    while datetime.now(UTC) < deadline:
        if check():
            return
        threading.Event().wait(0.2)
    raise AssertionError(f"not true after {timeout_s} s: {check}")


def test_two_replicas_store_every_report_once_and_notify_once(receiver: Receiver) -> None:
    with throwaway_pg_database("peerwatch_test") as url:  # the servers create the schema
        env = {"PEERWATCH_DATABASE_URL": url, "PEERWATCH_PROBE_TOKENS": PROBE_TOKEN,
               "PEERWATCH_ALERTMANAGER_URL": f"http://127.0.0.1:{receiver.server_port}",
               "PEERWATCH_ALERT_EVAL_INTERVAL_S": "0.5", "PEERWATCH_MAINTENANCE_INTERVAL_S": "1",
               # what is tested is the replicas' idempotency, not the gate: on a loaded
               # machine a slot is held for seconds and a waiter would be refused a 429
               "PEERWATCH_INGEST_WAIT_S": "120"}
        now = datetime.now(UTC) - timedelta(seconds=30)
        own = [sweep(host=f"node-{i % 4}", n=2, at=now - timedelta(minutes=i)).model_dump_json()
               for i in range(16)]
        shared = [sweep(host=f"node-{i % 4}", n=2, at=now - timedelta(minutes=20 + i))
                  .model_dump_json() for i in range(8)]
        bad = sweep(host="node-bad", n=2, at=now, errors={(0, 1): "CUDA error: boom"})
        with serve_processes(2, env) as (a, b), ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(_post, [a, b] * 8, own))
            both = list(pool.map(_post, [a] * 8 + [b] * 8, shared + shared))
            assert all(r.status_code == 201 for r in answers), \
                [(r.status_code, r.text[-120:]) for r in answers if r.status_code != 201]
            assert sorted(r.status_code for r in both) == [200] * 8 + [201] * 8
            assert all(_post(base, bad.model_dump_json()).status_code in (200, 201)
                       for base in (a, b))
            for base in (a, b):  # both answer, from the one database, once the last
                # report answered is expanded into its rows (serve answers before that)
                _wait_for(lambda base=base: len(httpx.get(f"{base}/api/v1/hosts", timeout=30)
                                                .json()["hosts"]) == 5)
            _wait_for(lambda: receiver.firing("ProbeFailing"))
            threading.Event().wait(3.0)  # six periodic rounds: nothing may be sent again
            sent = receiver.firing("ProbeFailing")
            assert [a["labels"]["host"] for a in sent] == ["node-bad"]
        engine = create_engine(url)
        try:
            with engine.connect() as conn:
                reports = conn.execute(text("SELECT count(*), count(DISTINCT report_id) "
                                            "FROM reports")).one()
                measurements = conn.execute(text("SELECT count(*) FROM measurements")).scalar()
                alerts = conn.execute(text("SELECT count(*) FROM alerts WHERE rule = "
                                           "'ProbeFailing'")).scalar()
        finally:
            engine.dispose()
    assert tuple(reports) == (16 + 8 + 1, 16 + 8 + 1)
    assert measurements == (16 + 8 + 1) * 2  # 2 ordered pairs of ce_write per report
    assert alerts == 1


def test_one_replica_leads_until_it_goes_and_delivery_is_exclusive(pg_database: str) -> None:
    engine = make_engine(Settings(database_url=pg_database))
    first, second = Leadership(engine), Leadership(engine)
    try:
        assert first.held() and first.held()  # kept, not taken again
        assert not second.held()
        first.release()  # the leader goes: the next to ask takes over
        assert second.held() and not first.held()
        with exclusive(engine, DELIVERY_LOCK) as mine:
            with exclusive(engine, DELIVERY_LOCK) as theirs:
                assert mine and not theirs
        with exclusive(engine, DELIVERY_LOCK) as again:
            assert again  # released with its transaction
    finally:
        first.release()
        second.release()
        engine.dispose()
