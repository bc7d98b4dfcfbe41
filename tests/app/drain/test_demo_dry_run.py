"""`peerwatch drain --scheduler none --dry-run` deciding over the demo's fleet, as docs/drain.md
shows it: a line per host, the demo's slow PCIe GPU taken out under a policy that counts one
degraded GPU, and nothing recorded or changed."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

from bench.helpers.serve import interrupt
from tests.probes.live_server import free_port

ADMIN = "demo-drain-admin"
HOSTS = ("h200x2-01", "hgx8-01", "mesh4-01", "pcie4-01")


def dry_run(base: str, policy: Path) -> str:
    done = subprocess.run([sys.executable, "-m", "peerwatch.app.cli", "drain", "--scheduler",
                           "none",
                           "--dry-run", "--once", "--server", base, "--policy", str(policy)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_drain_dry_run_decides_over_the_demo_fleet(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("take_out_on: {degraded: {min_lost_gpus: 1}}\n"
                      "debounce: 0\nsettle_after_boot: 0\n")
    base = f"http://127.0.0.1:{free_port()}"
    proc = subprocess.Popen(
        [sys.executable, "-m", "peerwatch.app.cli", "demo", "--port", base.rsplit(":", 1)[1],
         "--data-dir", str(tmp_path / "demo"), "--hosts", "4", "--racks", "0",
         "--admin-token", ADMIN], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        out = ""
        deadline = time.monotonic() + 180
        # the demo's hosts start spread over one inventory interval: wait for all of them
        while "mesh4-01: take_out:" not in out or not all(f"{h}:" in out for h in HOSTS):
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, f"no take-out decided:\n{out}"
            time.sleep(1)
            try:
                out = dry_run(base, policy)
            except AssertionError:  # the demo's server is not up yet
                continue
        lines = out.splitlines()
        assert sorted(line.split(":")[0] for line in lines) == list(HOSTS), out
        assert "mesh4-01: take_out: 1 of 4 GPUs not healthy (GPU1)" in out
        assert httpx.get(f"{base}/api/v1/actions").json()["actions"] == []
    finally:
        interrupt(proc)
