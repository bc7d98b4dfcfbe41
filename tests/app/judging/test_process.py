"""`serve` judges in a process of its own, and stores reports in processes of their own.

A real `peerwatch serve` on each backend: a posted report is judged by its child judge
process (not by the server process, which has no judge thread), whose figures reach
`/readyz` and `/metrics`; killed, the judge is started anew and a report posted while it was
down is judged all the same (the new judge's scan of the database finds it).
Then two judges of one PostgreSQL database (in-process, as two replicas' judge processes
would run) are handed the same host: it is judged once, not twice.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from bench.helpers.cpu import child_pids, cmdline
from bench.helpers.serve import free_port, interrupt, wait_for_healthz
from peerwatch.app.judging.worker import JudgeWorker, behind_hosts
from peerwatch.app.runtime.config import Settings
from tests.app.conftest import PROBE_TOKEN, probe_headers
from tests.app.factory import sweep
from tests.conftest import SETTLE_S, eventually


def _judge_pid(server: int) -> int | None:
    found = [p for p in child_pids(server) if " judge " in cmdline(p)]
    return found[0] if len(found) == 1 else None


def _send(base: str, body: str) -> httpx.Response:
    return httpx.post(f"{base}/api/v1/reports", content=body,
                      headers={**probe_headers(), "Content-Type": "application/json"}, timeout=60)


def _post(base: str, host: str, at: datetime, body: str | None = None) -> None:
    r = _send(base, body or sweep(host=host, at=at).model_dump_json())
    assert r.status_code == 201, r.text


def _refused_in_a_worker_as_in_process(base: str, stored: str) -> None:
    """The ingest worker's errors come back as the in-process path answers them."""
    again = _send(base, stored)
    assert again.status_code == 200 and again.json()["duplicate"] is True, again.text
    other = json.loads(stored)
    other["results"] = other["results"][:1]
    conflict = _send(base, json.dumps(other))
    assert conflict.status_code == 409, conflict.text
    bad = json.loads(stored)
    bad["report_id"] = "not-a-uuid"
    invalid = _send(base, json.dumps(bad))
    assert invalid.status_code == 422 and "report_id" in invalid.text, invalid.text


def _judged(base: str, host: str) -> dict[str, Any] | None:
    health = httpx.get(f"{base}/api/v1/hosts/{host}/health", timeout=60).json()
    return health if health.get("judged_at") and health["verdict"] == "healthy" else None


def serve(db_url: str, data_dir: Path, **env: str) -> tuple[subprocess.Popen[bytes], str]:
    """A real `peerwatch serve` on `db_url` (PEERWATCH_* overrides in `env`), its base URL."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "peerwatch.app.cli", "serve", "--port", str(port), "--database-url",
         db_url, "--no-local-probe", "--log-level", "warning"],
        env={**os.environ, "PEERWATCH_DATA_DIR": str(data_dir), "PEERWATCH_PROBE_TOKENS":
             PROBE_TOKEN, "PEERWATCH_STALE_AFTER_S": "86400", **env})
    return proc, f"http://127.0.0.1:{port}"


def test_serve_judges_in_its_judge_process_and_restarts_it(db_url: str, tmp_path: Path
                                                           ) -> None:
    proc, base = serve(db_url, tmp_path)
    now = datetime.now(UTC).replace(microsecond=0)
    try:
        wait_for_healthz(base, timeout_s=SETTLE_S)
        judge = eventually(lambda: _judge_pid(proc.pid))
        assert judge is not None, "serve started no judge process"
        # the database URL (a password, on most fleets) never in a command line; the
        # server's start is, so a restarted judge keeps the server's restart grace
        line = cmdline(judge)
        assert db_url not in line and "--database-url" not in line, line
        assert "--listening-since" in line, line
        report = sweep(host="node-a", at=now - timedelta(minutes=2))
        _post(base, "node-a", now - timedelta(minutes=2), report.model_dump_json())
        _refused_in_a_worker_as_in_process(base, report.model_dump_json())
        assert eventually(lambda: _judged(base, "node-a")), "the report was never judged"
        ready = eventually(lambda: (r := httpx.get(f"{base}/readyz", timeout=60).json())
                           ["judge"]["judged"] >= 1 and r)
        assert ready and ready["judge"]["lag_p99_s"] is not None, ready
        metrics = httpx.get(f"{base}/metrics", timeout=60).text
        assert "peerwatch_judge_lag_seconds_count 0.0" not in metrics
        assert "peerwatch_judge_lag_seconds_count" in metrics

        os.kill(judge, signal.SIGKILL)  # judging dies; the server goes on taking reports
        _post(base, "node-b", now - timedelta(minutes=1))
        again = eventually(lambda: (p := _judge_pid(proc.pid)) not in (None, judge) and p)
        assert again, "the judge process was not started anew"
        assert eventually(lambda: _judged(base, "node-b")), "judged by nobody after the restart"
        assert httpx.get(f"{base}/readyz", timeout=60).json()["judge"]["restarts"] == 1
    finally:
        interrupt(proc)
    assert proc.returncode == 0


def _judged_at(engine: Any, host: str) -> datetime | None:
    from sqlalchemy import select

    from peerwatch.app.store.tables.inventory import Host
    from peerwatch.app.store.tables.judged import JudgedHost
    with engine.connect() as conn:
        return conn.scalar(select(JudgedHost.judged_at).join(Host, Host.id == JudgedHost.host_id)
                           .where(Host.name == host))


def test_two_judges_of_one_database_judge_a_host_once(pg_database: str, tmp_path: Path
                                                      ) -> None:
    """Both replicas' judges are handed one host (its own wake, and the other's scan): the
    second finds it judged since it was submitted there and leaves it; a report stored
    after that is judged again."""
    from peerwatch.app.ingest.rows import ingest
    from peerwatch.app.judging.sessions import make_sessionmaker
    from peerwatch.app.store.db import make_engine
    from tests.app.conftest import _empty_pg

    _empty_pg(pg_database)
    settings = Settings(database_url=pg_database, data_dir=tmp_path,
                        probe_tokens=[PROBE_TOKEN])
    engine = make_engine(settings)
    first, second = JudgeWorker(settings), JudgeWorker(settings)
    try:
        now = datetime.now(UTC)
        with make_sessionmaker(engine)() as session:
            ingest(session, sweep(host="node-a", at=now - timedelta(minutes=2)), settings, now)
        second.submit("node-a", now.timestamp())  # submitted to both before either judges
        first.submit("node-a", now.timestamp())
        assert first._judge("node-a") is not None
        judged = _judged_at(engine, "node-a")
        assert judged is not None
        assert second._judge("node-a") is not None
        assert _judged_at(engine, "node-a") == judged  # not judged twice
        assert behind_hosts(engine, datetime.now(UTC)) == []

        later = datetime.now(UTC)
        with make_sessionmaker(engine)() as session:
            ingest(session, sweep(host="node-a", at=later - timedelta(minutes=1)), settings,
                   later)
        assert [h for h, _ in behind_hosts(engine, datetime.now(UTC))] == ["node-a"]
        second.submit("node-a", later.timestamp())  # the scan's find, after the new report
        assert second._judge("node-a") is not None
        assert _judged_at(engine, "node-a") > judged
        assert behind_hosts(engine, datetime.now(UTC)) == []
    finally:
        for worker in (first, second):
            worker.service.close()
            worker.engine.dispose()
        engine.dispose()
