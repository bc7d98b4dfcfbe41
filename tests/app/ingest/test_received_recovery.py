"""A report answered and left unexpanded (its server died between the 201 and the rows) is
expanded by the next `serve` from its stored body and judged, on both backends: what the
probe was told was stored is stored (app/ingest/expand.py's recovery job)."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

from peerwatch.app.ingest.expand import RECOVER_AFTER_S
from peerwatch.app.ingest.posted import receive_posted
from peerwatch.app.judging.sessions import make_sessionmaker
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.db import make_engine
from tests.app.factory import sweep
from tests.app.serve_process import wait_healthy
from tests.conftest import eventually
from tests.probes.live_server import free_port


def test_a_report_left_received_is_expanded_and_judged_by_the_next_server(
        tmp_path: Path, db_url: str) -> None:
    died = datetime.now(UTC) - timedelta(seconds=2 * RECOVER_AFTER_S)  # when it was answered
    report = sweep("node-left", n=2, at=died - timedelta(minutes=1))
    settings = Settings(database_url=db_url, data_dir=tmp_path)
    sessions = make_sessionmaker(make_engine(settings))
    answer, pending = receive_posted(sessions, report.model_dump_json().encode(), settings,
                                     died, canonical=True)
    assert pending is not None and not answer.duplicate  # the 201 the probe got

    port = free_port()
    env = {**os.environ, "PEERWATCH_DATA_DIR": str(tmp_path)}
    env.pop("PEERWATCH_DATABASE_URL", None)
    log = tmp_path / "serve.log"
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "peerwatch.app.cli", "serve", "--port",
                                 str(port),
                                 "--no-local-probe", "--log-level", "warning",
                                 "--database-url", db_url],
                                env=env, stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(base, proc)

        def judged() -> dict | None:
            r = httpx.get(f"{base}/api/v1/hosts/node-left/matrix", timeout=30)
            body = r.json() if r.status_code == 200 else {}
            return body if body.get("judged_at") and body.get("cells") else None

        matrix = eventually(judged)
        assert matrix, f"never expanded and judged: {log.read_text()[-3000:]}"
        ready = httpx.get(f"{base}/readyz", timeout=30).json()
        assert ready["ingest"]["recovered"] == 1 and ready["ingest"]["expand_failed"] == 0
        assert "expanded 1 report(s) left received" in log.read_text()
    finally:
        proc.terminate()
        proc.wait(60)
