"""`peerwatch serve`'s in-process probe: it watches the local host when there are GPUs (a
simulated fabric stands in for them here), keeps out of the way when there are none, and
`serve` + `probe --once` work as a pair."""

from __future__ import annotations

import logging
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from peerwatch.app.cli import main
from peerwatch.app.main import create_app
from peerwatch.app.runtime.local_probe import attach_local_probe, loopback_for
from peerwatch.probes.config import ProbeSettings
from peerwatch.probes.errors import FabricUnavailable
from peerwatch.probes.sim.simulated import SimulatedFabric
from tests.conftest import SETTLE_S
from tests.probes.live_server import free_port, server_settings, stored

FAST = ProbeSettings(inventory_interval_s=0.3, sweep_interval_s=1.0, sweep_jitter_s=0.0)


def _wait_for(predicate, timeout_s: float = SETTLE_S) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return False


def test_local_gpus_are_probed_in_process_with_a_credential_of_its_host(tmp_path: Path
                                                                        ) -> None:
    from peerwatch.app.demo.server import ServerThread

    settings = server_settings(tmp_path, tokens=())  # no external probe may post
    port = free_port()
    app = create_app(settings)
    attach_local_probe(app, "0.0.0.0", port, open_fabric=lambda: SimulatedFabric("h200x2"),
                       probe_settings=FAST)
    assert app.state.settings.probe_tokens == []  # no fleet-wide token is made for it
    with ServerThread(app, port=port):
        assert _wait_for(lambda: len(stored(settings).report_ids) >= 3)
        hosts = httpx.get(f"http://127.0.0.1:{port}/api/v1/hosts", timeout=5).json()["hosts"]
    assert [h["host"] for h in hosts] == ["sim-h200x2"]
    assert not [t for t in threading.enumerate() if t.name == "peerwatch-local-probe"]
    assert (tmp_path / "local-probe-spool").is_dir()


def test_without_gpus_the_server_just_serves(tmp_path: Path, caplog) -> None:
    from peerwatch.app.demo.server import ServerThread

    def no_gpus() -> SimulatedFabric:
        raise FabricUnavailable("NVML Shared Library Not Found")

    settings = server_settings(tmp_path)
    app = create_app(settings)
    attach_local_probe(app, "127.0.0.1", 0, open_fabric=no_gpus, probe_settings=FAST)
    with caplog.at_level(logging.INFO, logger="peerwatch.local_probe"), ServerThread(app) as srv:
        assert _wait_for(lambda: "serving only" in caplog.text)
        assert httpx.get(f"{srv.url}/healthz", timeout=5).status_code == 200
    assert "no local GPUs to probe (NVML Shared Library Not Found)" in caplog.text
    assert stored(settings).report_ids == []


def test_loopback_is_used_when_serving_on_every_address() -> None:
    assert loopback_for("0.0.0.0") == "127.0.0.1" and loopback_for("::") == "127.0.0.1"
    assert loopback_for("10.1.2.3") == "10.1.2.3"


def test_serve_and_probe_once_work_as_a_pair(tmp_path: Path, capsys) -> None:
    port = free_port()
    env = {**os.environ, "PEERWATCH_DATA_DIR": str(tmp_path), "PYTHONUNBUFFERED": "1"}
    env.pop("PEERWATCH_PROBE_TOKENS", None)
    env.pop("PEERWATCH_DATABASE_URL", None)
    server = subprocess.Popen([sys.executable, "-m", "peerwatch.app.cli", "serve", "--port",
                               str(port)],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = f"http://127.0.0.1:{port}"
        assert _wait_for(lambda: _up(url)), "serve did not come up"
        issued = subprocess.run([sys.executable, "-m", "peerwatch.app.cli", "token", "issue",
                                 "--host", "sim-h200x2", "--out", str(tmp_path / "token")],
                                env=env, capture_output=True, text=True, timeout=120)
        assert issued.returncode == 0, issued.stderr
        status = main(["probe", "--once", "--fabric", "simulated:h200x2", "--server", url,
                       "--token-file", str(tmp_path / "token"), "--spool-dir",
                       str(tmp_path / "spool")])
        out = capsys.readouterr().out
        # answered once stored whole; the host's rows are written just after (serve)
        def swept() -> list[dict]:
            return [h for h in httpx.get(f"{url}/api/v1/hosts", timeout=5).json()["hosts"]
                    if h["last_sweep_at"]]

        _wait_for(lambda: bool(swept()))
        hosts = swept()
    finally:
        server.send_signal(signal.SIGTERM)
        _, err = server.communicate(timeout=30)
    assert status == 0 and "delivered to" in out
    assert re.search(r"sweep GPU time \d", out) and re.search(r"agent memory \(RSS\) \d", out)
    assert [h["host"] for h in hosts] == ["sim-h200x2"] and hosts[0]["last_sweep_at"]
    if "no local GPUs to probe" not in err:
        pytest.fail(f"serve said nothing about its local probe on a CPU machine:\n{err}")
    # uvicorn shuts down gracefully, then re-raises the signal so the exit status says why
    assert server.returncode in (0, -signal.SIGTERM) and "Finished server process" in err


def _up(url: str) -> bool:
    try:
        return httpx.get(f"{url}/healthz", timeout=1).status_code == 200
    except httpx.TransportError:
        return False
