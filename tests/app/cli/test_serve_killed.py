"""A `serve` killed outright (SIGKILL, the OOM killer) leaves no process of its behind.

Its ingest workers (a fork server and its pool) never noticed the server's death on their
own: each holds both ends of its call queue's pipe, so it never reads EOF, and the fork
server lives while any worker does. They kept the server's database connections and its
stdout: a CI run once hung for good reading that pipe after killing a server that was slow
to stop (app/ingest/pool.py `_die_with`).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psutil

from tests.app.demo.test_stop import _alive, _descendants, _is_judge
from tests.app.serve_process import wait_healthy
from tests.conftest import eventually
from tests.probes.live_server import free_port


def _pool_up(pid: int) -> list[psutil.Process] | None:
    """Every child once the fork server has started a worker (the pool's warm-up)."""
    children = _descendants(pid)
    forkservers = [p for p in children if "multiprocessing.forkserver" in " ".join(p.cmdline())]
    return children if any(f.children() for f in forkservers) else None


def test_a_killed_server_leaves_no_ingest_worker(tmp_path: Path, db_url: str) -> None:
    port = free_port()
    env = {**os.environ, "PEERWATCH_DATA_DIR": str(tmp_path)}
    env.pop("PEERWATCH_DATABASE_URL", None)
    command = [sys.executable, "-m", "peerwatch.app.cli", "serve", "--port", str(port),
               "--no-local-probe", "--log-level", "warning", "--database-url", db_url]
    log = tmp_path / "serve.log"
    with log.open("w") as out:  # a file, not a pipe: a process left behind would hold it
        proc = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_healthy(f"http://127.0.0.1:{port}", proc)
        children = eventually(lambda: _pool_up(proc.pid))
        assert children, f"no ingest worker started: {log.read_text()[-2000:]}"
        assert any(_is_judge(p) for p in children), "no judge process"
    finally:
        proc.kill()
        proc.wait()
    left = eventually(lambda: not _alive(children)) or _alive(children)
    assert left is True, f"still running after the server was killed: {left}"
