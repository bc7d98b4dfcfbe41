"""`peerwatch drain` as a loop: round after round it records a change once, not every round,
and Ctrl-C ends it (status 130, no traceback)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.deploy.test_slurm_drain import ADMIN, CUT, drain_server, report


def test_the_loop_records_a_change_once_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("debounce: 0\nsettle_after_boot: 0\n")  # observe mode
    with drain_server(tmp_path) as url:
        report(url, "node-cut", CUT)
        report(url, "node-ok")
        proc = subprocess.Popen(
            [sys.executable, "-m", "peerwatch.app.cli", "drain", "--scheduler", "none", "--server",
             url,
             "--policy", str(policy), "--interval", "0.2"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "PEERWATCH_DRAIN_TOKEN": ADMIN})
        try:
            deadline = time.monotonic() + 120
            rounds = 0
            while rounds < 3:
                assert proc.poll() is None and time.monotonic() < deadline
                line = proc.stdout.readline() if proc.stdout else ""
                rounds += line.startswith("node-ok: ")
        finally:
            proc.send_signal(signal.SIGINT)
            _out, err = proc.communicate(timeout=60)
        assert proc.returncode == 130 and "Traceback" not in err, err
        kinds = [(a["host"], a["kind"], a["mode"])
                 for a in httpx.get(f"{url}/api/v1/actions").json()["actions"]]
        assert kinds == [("node-cut", "take_out", "observe")]


def test_a_breaker_tripped_in_observe_mode_holds_nothing_once_acting(tmp_path: Path) -> None:
    from peerwatch.app.drain.client import DrainClient
    from peerwatch.app.drain.facts import Decision, Do

    with drain_server(tmp_path) as url:
        client = DrainClient(url, ADMIN)
        client.report(Decision("", Do.TRIP_BREAKER, "would pass the limit"), "breaker_trip",
                      "slurm", "observe", "test")
        assert client.state("slurm", "observe", 600)[2].open
        assert not client.state("slurm", "act", 600)[2].open
        client.close()
