"""Several real `peerwatch serve` processes on loopback ports, for the replica test and
bench/fleet.py.

`serve_processes(n, env)` starts n servers against the database in `env`
(PEERWATCH_DATABASE_URL), waits until each answers /healthz, yields their base URLs, and
stops them (SIGINT, then kill) on exit; a server that dies early fails with its log.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from bench.helpers.serve import FLEET_ENV


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ServerDied(RuntimeError):
    pass


def _wait_up(base: str, proc: subprocess.Popen[bytes], log: Path, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise ServerDied(f"{base} exited with {proc.returncode}: {log.read_text()[-3000:]}")
        try:
            if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise ServerDied(f"{base} not up after {timeout_s:.0f} s: {log.read_text()[-3000:]}")


@contextmanager
def serve_processes(n: int, env: dict[str, str], log_level: str = "warning",
                    timeout_s: float = 120.0) -> Iterator[list[str]]:
    """n `peerwatch serve` processes sharing `env`; yields their base URLs."""
    logs = Path(tempfile.mkdtemp(prefix="peerwatch-serve-"))
    procs: list[subprocess.Popen[bytes]] = []
    bases: list[str] = []
    try:
        for i in range(n):
            port = free_port()
            log = logs / f"serve-{i}.log"
            with log.open("wb") as out:
                procs.append(subprocess.Popen(
                    [sys.executable, "-m", "peerwatch.app.cli", "serve", "--port", str(port),
                     "--no-local-probe", "--log-level", log_level],
                    env={**os.environ, **FLEET_ENV, **env}, stdout=out,
                    stderr=subprocess.STDOUT))
            bases.append(f"http://127.0.0.1:{port}")
        for base, proc, i in zip(bases, procs, range(n), strict=True):
            _wait_up(base, proc, logs / f"serve-{i}.log", timeout_s)
        yield bases
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
        for proc in procs:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
