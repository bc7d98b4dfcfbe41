"""The Slurm hooks against a live peerwatch server on loopback.

The server is real (create_app on SQLite under uvicorn); `scontrol` is a hand-written fake
script on PATH that records what it is asked (there is no Slurm controller here) and answers
`show node` with the reason given in the environment.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import uvicorn

from peerwatch.app.main import create_app
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.db import make_engine, upgrade_to_head
from peerwatch.probes.report import TestName
from peerwatch.probes.sim.faults import LinksDown
from peerwatch.probes.sim.simulated import SimulatedFabric
from peerwatch.probes.sweep import SweepOptions, build_report
from tests.conftest import SETTLE_S, eventually

ROOT = Path(__file__).resolve().parents[2]
HEALTH = ROOT / "deploy" / "slurm" / "peerwatch-slurm-health.py"
PROLOG = ROOT / "deploy" / "slurm" / "peerwatch-taskprolog.sh"
TOKEN = "slurm-test-token"

FAKE_SCONTROL = """#!/bin/sh
echo "$@" >> "$SCONTROL_LOG"
if [ "$1" = show ]; then echo "NodeName=$3 State=IDLE Reason=${FAKE_REASON:-none} [root@2026]"; fi
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    db = tmp_path_factory.mktemp("slurm") / "pw.db"
    settings = Settings(database_url=f"sqlite:///{db}", probe_tokens=[TOKEN])
    upgrade_to_head(make_engine(settings))
    port = _free_port()
    srv = uvicorn.Server(uvicorn.Config(create_app(settings), host="127.0.0.1", port=port,
                                        log_level="warning"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + SETTLE_S
    while not srv.started:
        assert time.monotonic() < deadline, "server did not start"
        time.sleep(0.05)
    ce = SweepOptions(tests=(TestName.CE_WRITE,))
    for host, faults in (("node-ok", ()), ("node-cut", (LinksDown(gpu=5, count=18),))):
        fab = SimulatedFabric("hgx8", seed=3, faults=faults, hostname=host)
        r = httpx.post(f"{url}/api/v1/reports", content=build_report(fab, options=ce)
                       .model_dump_json(), headers={"Authorization": f"Bearer {TOKEN}",
                                                    "Content-Type": "application/json"})
        assert r.status_code == 201, r.text
    # the server judges after answering: the hooks read verdicts, so wait for both
    for host in ("node-ok", "node-cut"):
        assert eventually(functools.partial(_judged, url, host)), f"{host} never judged"
    yield url
    srv.should_exit = True
    thread.join(timeout=10)


def _judged(url: str, host: str) -> bool:
    r = httpx.get(f"{url}/api/v1/hosts/{host}/health", timeout=60)
    return r.status_code == 200 and r.json().get("judged_at") is not None


def _health_module():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("peerwatch_slurm_health", HEALTH)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run_health(tmp_path: Path, url: str, node: str, reason: str = "none") -> list[str]:
    fake = tmp_path / "scontrol"
    fake.write_text(FAKE_SCONTROL)
    fake.chmod(0o755)
    log = tmp_path / "calls.log"
    env = {**os.environ, "SCONTROL_LOG": str(log), "FAKE_REASON": reason}
    out = subprocess.run([sys.executable, str(HEALTH), "--server", url, "--node", node,
                          "--scontrol", str(fake)], env=env, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    return [line for line in log.read_text().splitlines() if line.startswith("update")] \
        if log.exists() else []


def test_healthy_node_is_left_alone(server: str, tmp_path: Path) -> None:
    assert _run_health(tmp_path, server, "node-ok") == []


def test_node_with_a_gpu_cut_off_is_drained_with_the_reason(server: str, tmp_path: Path) -> None:
    [call] = _run_health(tmp_path, server, "node-cut")
    assert "nodename=node-cut" in call and "state=drain" in call
    assert "peerwatch:" in call and "GPU5" in call


def test_node_drained_by_peerwatch_is_resumed_when_healthy(server: str, tmp_path: Path) -> None:
    [call] = _run_health(tmp_path, server, "node-ok", reason="peerwatch: 7/8 GPUs healthy")
    assert call == "update nodename=node-ok state=resume"


def test_drain_by_someone_else_is_not_undone(server: str, tmp_path: Path) -> None:
    assert _run_health(tmp_path, server, "node-ok", reason="bad DIMM, ticket 42") == []


def test_unknown_node_is_drained_naming_the_probe(server: str, tmp_path: Path) -> None:
    [call] = _run_health(tmp_path, server, "node-nobody-knows")
    assert "unknown to peerwatch" in call


def test_node_not_judged_yet_is_neither_drained_nor_resumed() -> None:
    """A server whose judge is behind says "unknown: not judged yet" (app/queries/
    scheduler.py): the health check must not drain on that, nor resume one of its drains."""
    health = _health_module()
    answer = {"hosts": [], "left_out": {"node-new": "unknown: not judged yet",
                                        "node-gone": "stale: no report for 2 h"}}
    with pytest.raises(health.NoVerdict, match="not judged yet"):
        health.judge(answer, "node-new", 0)
    assert health.judge(answer, "node-gone", 0) == "stale: no report for 2 h"


def test_unreachable_server_leaves_the_node_alone(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{_free_port()}"
    assert _run_health(tmp_path, url, "node-cut") == []


def test_taskprolog_exports_the_placed_gpus(server: str) -> None:
    env = {**os.environ, "PEERWATCH_URL": server, "SLURMD_NODENAME": "node-cut",
           "PEERWATCH_PATTERN": "ring", "PEERWATCH_GPUS": "4"}
    out = subprocess.run(["sh", str(PROLOG)], env=env, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    exports = dict(line.removeprefix("export ").split("=", 1)
                   for line in out.stdout.splitlines() if line.startswith("export "))
    gpus = [int(g) for g in exports["CUDA_VISIBLE_DEVICES"].split(",")]
    assert len(gpus) == 4 and 5 not in gpus
    assert exports["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"


def test_taskprolog_does_nothing_unless_asked(server: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PEERWATCH_")}
    out = subprocess.run(["sh", str(PROLOG)], env=env, capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout == ""
