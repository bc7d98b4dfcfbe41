"""`peerwatch drain` as a loop: round after round it records a change once, not every round,
and Ctrl-C ends it (status 130, no traceback). Its waits are on conditions (rounds printed,
the process ended) with a limit no loaded machine reaches: a loaded CI once ran past a fixed
60 s."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import httpx

from tests.conftest import eventually
from tests.deploy.test_slurm_drain import ADMIN, CUT, drain_server, report

LIMIT_S = 600.0


def _read(proc: subprocess.Popen[str], lines: list[str]) -> None:
    for line in proc.stdout or ():
        lines.append(line)


def test_the_loop_records_a_change_once_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("debounce: 0\nsettle_after_boot: 0\n")  # observe mode
    with drain_server(tmp_path) as url:
        report(url, "node-cut", CUT)
        report(url, "node-ok")
        errors = tmp_path / "stderr"
        with errors.open("w") as err_file:
            proc = subprocess.Popen(
                [sys.executable, "-m", "peerwatch.app.cli", "drain", "--scheduler", "none",
                 "--server", url, "--policy", str(policy), "--interval", "0.2"],
                stdout=subprocess.PIPE, stderr=err_file, text=True,
                env={**os.environ, "PEERWATCH_DRAIN_TOKEN": ADMIN})
        lines: list[str] = []
        reader = threading.Thread(target=_read, args=(proc, lines), daemon=True)
        reader.start()
        try:  # three rounds printed, or the loop ended early (the assertion says so)
            eventually(lambda: proc.poll() is not None or
                       sum(line.startswith("node-ok: ") for line in list(lines)) >= 3,
                       within_s=LIMIT_S)
            assert proc.poll() is None, f"the loop ended early: {errors.read_text()}"
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=LIMIT_S)
            reader.join(timeout=LIMIT_S)
        err = errors.read_text()
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


def test_a_health_check_observes_while_a_loop_holds_the_lease(tmp_path: Path) -> None:
    from peerwatch.app.drain.client import DrainClient
    from peerwatch.app.drain.controller import Leader, ServerLease

    with drain_server(tmp_path) as url:
        client = DrainClient(url, ADMIN)
        lease = ServerLease(client, "slurm")
        check = Leader(lease, "node-1:7", 60.0, take=False)
        assert check.observing() is None  # no loop: the node's own check acts
        loop = Leader(lease, "head-a:1", 600.0)
        assert loop.observing() is None
        said = check.observing()
        assert said is not None and "held by head-a:1" in said
        other = Leader(lease, "head-b:2", 600.0).observing()
        assert other is not None and "held by head-a:1" in other
        assert httpx.get(f"{url}/api/v1/drain/lease").json()["holder"] == "head-a:1"
        lease.release("head-a:1")
        assert check.observing() is None
        client.close()
