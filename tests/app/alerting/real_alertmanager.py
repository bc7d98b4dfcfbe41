"""A real Alertmanager (Debian's `prometheus-alertmanager`) on a loopback port, for tests.

Started per test module with an empty storage dir and clustering off, stopped (terminate,
then kill) when the module ends. CI fails, never skips, when the binary is missing.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import SETTLE_S, background, require

BINARY = "prometheus-alertmanager"
CONFIG = """\
route:
  receiver: nobody
  group_wait: 1h
receivers:
  - name: nobody
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_ready(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + SETTLE_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"Alertmanager exited with {proc.returncode}: {log.read_text()[-2000:]}")
        try:
            if httpx.get(f"{url}/-/ready", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    pytest.fail(f"Alertmanager not ready after {SETTLE_S:g} s: {log.read_text()[-2000:]}")


@contextmanager
def running_alertmanager(config: str, work: Path) -> Iterator[str]:
    """A real Alertmanager with `config` (YAML text) on a free loopback port: its URL."""
    binary = shutil.which(BINARY) or f"/usr/bin/{BINARY}"
    require(Path(binary).exists(), f"{BINARY} (Debian package prometheus-alertmanager)")
    (work / "alertmanager.yml").write_text(config)
    port = _free_port()
    log = work / "log.txt"
    argv = [binary, f"--config.file={work / 'alertmanager.yml'}",
            f"--storage.path={work / 'data'}", f"--web.listen-address=127.0.0.1:{port}",
            "--cluster.listen-address="]
    with background(argv, log) as proc:
        url = f"http://127.0.0.1:{port}"
        _wait_ready(url, proc, log)
        yield url


@pytest.fixture(scope="module")
def alertmanager_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_alertmanager(CONFIG, tmp_path_factory.mktemp("alertmanager")) as url:
        yield url


def alerts_in(url: str, **filters: Any) -> list[dict[str, Any]]:
    """What Alertmanager holds now (`GET /api/v2/alerts`)."""
    answer = httpx.get(f"{url}/api/v2/alerts", params=filters, timeout=5)
    answer.raise_for_status()
    result: list[dict[str, Any]] = answer.json()
    return result
