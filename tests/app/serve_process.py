"""`peerwatch serve` as a real subprocess for tests: started, waited for, stopped."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from bench.helpers.serve import free_port, interrupt
from tests.app.conftest import ADMIN_TOKEN, PROBE_TOKEN
from tests.conftest import SETTLE_S


def wait_healthy(base: str, proc: subprocess.Popen[str] | subprocess.Popen[bytes],
                 within_s: float = SETTLE_S) -> None:
    """Return once `base/healthz` answers 200; fail the test if the process exits first."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            out = proc.communicate()[0]
            text = out.decode() if isinstance(out, bytes) else out
            pytest.fail(f"server exited: {(text or '')[-3000:]}")
        try:
            if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.1)
    pytest.fail(f"server did not come up in {within_s:g} s")


@dataclass
class Served:
    """A running `peerwatch serve`: where it listens, its process, its log."""

    base: str
    port: int
    proc: subprocess.Popen[bytes]
    log: Path

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


@contextmanager
def serving(data_dir: Path, database_url: str, env: dict[str, str] | None = None
            ) -> Iterator[Served]:
    """`peerwatch serve --no-local-probe` on a free loopback port with the tests' tokens and
    `env`, its output in `data_dir/serve.log`; stopped as Ctrl-C would, killed if it lingers."""
    port = free_port()
    environ = {**os.environ, "PEERWATCH_DATA_DIR": str(data_dir),
               "PEERWATCH_PROBE_TOKENS": PROBE_TOKEN, "PEERWATCH_ADMIN_TOKEN": ADMIN_TOKEN,
               **(env or {})}
    environ.pop("PEERWATCH_DATABASE_URL", None)
    log = data_dir / "serve.log"
    command = [sys.executable, "-m", "peerwatch.app.cli", "serve", "--port", str(port),
               "--no-local-probe", "--database-url", database_url]
    with log.open("wb") as out:  # a file, not a pipe: nobody has to drain it
        proc = subprocess.Popen(command, env=environ, stdout=out, stderr=subprocess.STDOUT)
    served = Served(f"http://127.0.0.1:{port}", port, proc, log)
    try:
        wait_healthy(served.base, proc)
        yield served
    finally:
        interrupt(proc)
