"""Through `peerwatch serve`: reports are checked in ingest worker processes, and a report
about another host is refused there too (the speaker travels with the body)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx

from bench.helpers.serve import free_port, interrupt, wait_for_healthz
from peerwatch.app.runtime.config import Settings
from tests.app.factory import sweep
from tests.conftest import eventually
from tests.probes.live_server import host_credential

WORKERS_READY = "ingest worker process(es) ready"


def test_serve_refuses_another_hosts_report_in_its_workers(db_url: str,
                                                           tmp_path: Path) -> None:
    port, log = free_port(), tmp_path / "serve.log"
    env = {**os.environ, "PEERWATCH_DATA_DIR": str(tmp_path)}
    env.pop("PEERWATCH_PROBE_TOKENS", None)
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "peerwatch.app.cli", "serve", "--port", str(port),
             "--database-url", db_url, "--no-local-probe", "--log-level", "info"],
            env=env, stdout=out,
            stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for_healthz(base, timeout_s=300)
        assert eventually(lambda: WORKERS_READY in log.read_text(), within_s=300)
        settings = Settings(data_dir=tmp_path, database_url=db_url)
        own = {"Authorization": f"Bearer {host_credential(settings, 'gpu-a')}"}
        r = httpx.post(f"{base}/api/v1/reports", content=sweep("gpu-a").model_dump_json(),
                       headers=own, timeout=60)
        assert r.status_code == 201, r.text
        r = httpx.post(f"{base}/api/v1/reports", content=sweep("gpu-b").model_dump_json(),
                       headers=own, timeout=60)
        assert r.status_code == 403, r.text
        assert r.json()["detail"] == "probe:gpu-a may not report for host 'gpu-b'"
        def listed() -> list[str]:  # answered once stored whole; its rows come just after
            hosts = httpx.get(f"{base}/api/v1/hosts", timeout=60).json()["hosts"]
            return [h["host"] for h in hosts]

        assert eventually(listed) == ["gpu-a"]
    finally:
        interrupt(proc)
    text = log.read_text()
    assert "Traceback" not in text and "PEERWATCH_PROBE_TOKENS is set" not in text
