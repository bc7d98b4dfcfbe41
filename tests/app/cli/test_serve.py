"""`peerwatch serve` for real: a subprocess on a loopback port, an empty SQLite file created,
a report posted and read back, then shut down."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from bench.helpers.serve import wait_for_healthz
from peerwatch.app.runtime.config import Settings
from peerwatch.app.server import SchemaBehind, prepare_database
from peerwatch.app.store.db import make_engine
from tests.app.factory import sweep
from tests.conftest import eventually


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_serve_creates_the_database_and_answers(tmp_path: Path) -> None:
    port = _free_port()
    env = {**os.environ, "PEERWATCH_DATA_DIR": str(tmp_path), "PEERWATCH_PROBE_TOKENS": "tok"}
    env.pop("PEERWATCH_DATABASE_URL", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "peerwatch.app.cli", "serve", "--port", str(port), "--log-level",
         "warning"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for_healthz(base)
        assert (tmp_path / "peerwatch.db").exists()
        r = httpx.post(f"{base}/api/v1/reports", content=sweep().model_dump_json(),
                       headers={"Authorization": "Bearer tok",
                                "Content-Type": "application/json"}, timeout=10)
        assert r.status_code == 201, r.text
        # answered once stored whole; its rows (the host among them) are written after
        def listed() -> list[str]:
            return [h["host"] for h in httpx.get(f"{base}/api/v1/hosts",
                                                 timeout=10).json()["hosts"]]

        assert eventually(lambda: listed() == ["node-a"]), listed()
    finally:
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=15)
    assert proc.returncode == 0, out.decode()


def test_an_outdated_schema_is_refused(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path)
    prepare_database(settings)
    engine = make_engine(settings)
    with engine.begin() as conn:
        conn.exec_driver_sql("UPDATE alembic_version SET version_num = '0001'")
    engine.dispose()
    with pytest.raises(SchemaBehind, match="run `peerwatch migrate` first"):
        prepare_database(settings)
