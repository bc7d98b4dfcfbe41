"""Logs: `serve --no-local-probe` logs with time and level, a token in a query
string never reaches the access log, `/healthz` adds no lines per call, and a failed SQL
statement never prints its parameters (SQLite and PostgreSQL)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError

from peerwatch.app.runtime.config import Settings
from peerwatch.app.runtime.logs import REDACTED, redact_query
from peerwatch.app.store.db import make_engine
from tests.app.serve_process import wait_healthy
from tests.probes.live_server import free_port

LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (DEBUG|INFO|WARNING|ERROR|CRITICAL) ")
SECRET = "s3cr3t-t0ken-value"


def test_serve_without_local_probe_logs_each_event_on_one_line(tmp_path: Path) -> None:
    port = free_port()
    env = {**os.environ, "PEERWATCH_DATA_DIR": str(tmp_path), "PEERWATCH_PROBE_TOKENS": "tok"}
    env.pop("PEERWATCH_DATABASE_URL", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "peerwatch.app.cli", "serve", "--port", str(port),
         "--no-local-probe"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(base, proc)
        for _ in range(5):
            httpx.get(f"{base}/healthz", timeout=5)
        httpx.get(f"{base}/api/v1/hosts?access_token={SECRET}&since=x", timeout=5)
        httpx.get(f"{base}/api/v1/hosts?api_key={SECRET}", timeout=5)
    finally:
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=15)
    lines = [line for line in out.splitlines() if line.strip()]
    assert lines and all(LINE.match(line) for line in lines), out
    assert any("INFO peerwatch" in line or "INFO app" in line for line in lines), out
    assert SECRET not in out and "access_token=REDACTED" in out, out
    serving = out[out.index("Application startup complete"):]
    assert "alembic" not in serving.lower(), out  # /healthz reads the revision quietly
    assert sum("GET /healthz" in line for line in lines) >= 5  # the access log is there


def test_redact_query_keeps_harmless_parameters() -> None:
    assert redact_query("/api/v1/hosts?token=abc&since=2026") == \
        "/api/v1/hosts?token=REDACTED&since=2026"
    assert redact_query("/x?Authorization=Bearer%20abc") == "/x?Authorization=REDACTED"
    assert redact_query("/x?since=2026&step=60") == "/x?since=2026&step=60"


def test_sql_errors_hide_their_parameters(db_url: str, tmp_path: Path) -> None:
    engine = make_engine(Settings(database_url=db_url, data_dir=tmp_path))
    try:
        with engine.connect() as conn, pytest.raises(SQLAlchemyError) as caught:
            conn.execute(text("INSERT INTO no_such_table (name) VALUES (:name)"),
                         {"name": SECRET})
        assert SECRET not in str(caught.value)
        assert "hidden due to hide_parameters" in str(caught.value)
    finally:
        engine.dispose()


@pytest.mark.parametrize("query", [
    "to%6Ben=S", "%74oken=S", "since=1;token=S", "bearer=S", "pw=S", "PassWord=S",
    "x_api_key=S", "Authorization=Bearer%20S", "a=1&%54OKEN=S&b=2", "session_id=S",
])
def test_redaction_goes_by_meaning_not_spelling(query: str) -> None:
    logged = redact_query(f"/api/v1/hosts?{query}", "GET")
    assert "S" not in logged.split("?", 1)[1].replace("REDACTED", ""), logged
    assert REDACTED in logged


def test_a_write_logs_no_query_string() -> None:
    for method in ("POST", "DELETE", "PUT", "PATCH"):
        assert redact_query("/api/v1/maintenance?anything=S&x=1", method) == \
            "/api/v1/maintenance"
    assert redact_query("/api/v1/hosts?since=1;step=60", "GET") == \
        "/api/v1/hosts?since=1;step=60"
