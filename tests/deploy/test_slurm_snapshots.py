"""The Slurm prolog/epilog pair for real: run as slurmd would (SLURM_JOB_ID set, no
arguments) against a real `peerwatch serve` subprocess on the simulated fabric; then with the
server down (the job is not failed, the snapshot is spooled) and delivered once it is back.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

from bench.helpers.serve import free_port, serve_process

ROOT = Path(__file__).resolve().parents[2]
SLURM = ROOT / "deploy" / "slurm"
TOKEN = "slurm-snapshot-token"
NODE = "gpu-node-7"


def hook(which: str, job: str, server: str, tmp_path: Path) -> tuple[int, float, str]:
    """Run peerwatch-<which>.sh as slurmd would: exit status, seconds taken, stderr."""
    token = tmp_path / "probe-token"
    token.write_text(TOKEN)
    env = {**os.environ, "SLURM_JOB_ID": job, "SLURMD_NODENAME": NODE,
           "PEERWATCH_URL": server, "PEERWATCH_TOKEN_FILE": str(token),
           "PEERWATCH_SNAPSHOT_SPOOL": str(tmp_path / "spool"),
           "PEERWATCH_BIN": str(Path(sys.executable).parent / "peerwatch"),
           "PEERWATCH_FABRIC": "simulated:hgx8", "PEERWATCH_HOSTNAME": NODE}
    env.pop("PEERWATCH_PROBE_TOKEN", None)
    start = time.monotonic()
    done = subprocess.run([str(SLURM / f"peerwatch-{which}.sh")], env=env, capture_output=True,
                          text=True, timeout=60)
    return done.returncode, time.monotonic() - start, done.stderr


def phases(server: str) -> list[tuple[str, str]]:
    listed = httpx.get(f"{server}/api/v1/hosts/{NODE}/snapshots").json()["snapshots"]
    return [(s["job_id"], s["phase"]) for s in listed]


def test_prolog_and_epilog_post_a_job_pair_then_survive_a_server_outage(
        tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'pw.db'}"
    env = {"PEERWATCH_PROBE_TOKENS": TOKEN}
    spool = tmp_path / "spool"
    with serve_process(db, tmp_path / "data", env) as server:
        rc, took, err = hook("prolog", "101", server, tmp_path)
        assert rc == 0 and "delivered" in err, err
        assert took < 20  # the command's own start-up; the reading itself is milliseconds
        rc, _, err = hook("epilog", "101", server, tmp_path)
        assert rc == 0, err
        assert phases(server) == [("101", "epilog"), ("101", "prolog")]
        diff = httpx.get(f"{server}/api/v1/hosts/{NODE}/jobs/101/diff")
        assert diff.status_code == 200 and diff.json()["changes"] == []
    # The server is down: the prolog still succeeds, and spools the snapshot.
    down = f"http://127.0.0.1:{free_port()}"
    rc, took, err = hook("prolog", "102", down, tmp_path)
    assert rc == 0 and "spooled" in err, err
    assert len(list(spool.glob("*.snapshot.json"))) == 1
    with serve_process(db, tmp_path / "data", env) as server:  # back, same database
        rc, _, err = hook("epilog", "102", server, tmp_path)
        assert rc == 0 and "delivered 1 spooled snapshot" in err, err
        assert list(spool.glob("*.snapshot.json")) == []
        assert phases(server)[:2] == [("102", "epilog"), ("102", "prolog")]
        assert httpx.get(f"{server}/api/v1/hosts/{NODE}/jobs/102/diff").status_code == 200


def test_outside_a_job_the_hooks_do_nothing(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "SLURM_JOB_ID"}
    done = subprocess.run([str(SLURM / "peerwatch-prolog.sh")], env=env, capture_output=True,
                          text=True, timeout=30)
    assert done.returncode == 0 and done.stderr == ""


def test_a_failing_peerwatch_never_fails_the_job(tmp_path: Path) -> None:
    broken = tmp_path / "peerwatch"
    broken.write_text("#!/bin/sh\necho boom >&2\nexit 3\n")
    broken.chmod(0o755)
    env = {**os.environ, "SLURM_JOB_ID": "103", "PEERWATCH_BIN": str(broken),
           "PEERWATCH_SNAPSHOT_SPOOL": str(tmp_path / "spool")}
    done = subprocess.run([str(SLURM / "peerwatch-epilog.sh")], env=env, capture_output=True,
                          text=True, timeout=30)
    assert done.returncode == 0
    assert "no epilog snapshot of job 103 (exit 3)" in done.stderr
