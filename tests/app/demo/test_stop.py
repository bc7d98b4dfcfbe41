"""`peerwatch demo` stops cleanly on SIGTERM and on Ctrl-C, leaving no process behind.

The demo runs the server `serve` runs: a judge child process and ingest worker processes
(a fork server and its workers). Each of them must be gone once the demo has exited, however
it was stopped: SIGTERM to the demo alone (`kill`, a service manager), or SIGINT to its whole
process group (Ctrl-C at a terminal reaches every process of the foreground group). The
signal is sent as soon as the judge is up, which on a loaded machine is before the demo has
finished starting: a signal then once killed the demo outright and left its children running.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import psutil
import pytest

from tests.conftest import SETTLE_S, eventually
from tests.probes.live_server import free_port


def _healthy(base: str) -> bool:
    try:
        return httpx.get(f"{base}/healthz", timeout=2.0).status_code == 200
    except httpx.TransportError:
        return False


def _descendants(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def _is_judge(process: psutil.Process) -> bool:
    try:
        return "judge" in process.cmdline()
    except psutil.Error:
        return False


def _alive(processes: list[psutil.Process]) -> list[str]:
    out = []
    for p in processes:
        try:
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                out.append(f"{p.pid} {' '.join(p.cmdline())[:120]}")
        except psutil.NoSuchProcess:
            pass
    return out


@pytest.mark.parametrize("how", ["SIGTERM to the demo", "Ctrl-C to its process group"])
def test_the_demo_stops_with_every_child_process(tmp_path: Path, how: str) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    out_log, err_log = tmp_path / "demo.out", tmp_path / "demo.err"
    # output to files, not pipes: a child left behind would hold a pipe open
    with out_log.open("w") as out_file, err_log.open("w") as err_file:
        proc = subprocess.Popen(
            [sys.executable, "-m", "peerwatch.app.cli", "demo", "--port", str(port), "--data-dir",
             str(tmp_path / "demo"), "--hosts", "2", "--racks", "0", "--backfill-hours", "0"],
            stdout=out_file, stderr=err_file, start_new_session=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        assert eventually(lambda: _healthy(base)), "the demo never served /healthz"
        children = eventually(lambda: [p for p in _descendants(proc.pid) if _is_judge(p)]
                              and _descendants(proc.pid))
        assert children, "the demo started no judge process"
        judge = next(p for p in children if _is_judge(p))
        assert os.getpgid(judge.pid) != os.getpgid(proc.pid), (
            "the judge process shares the demo's process group")
        children = _descendants(proc.pid)  # every child up by now, ingest workers too
        if how.startswith("SIGTERM"):
            proc.send_signal(signal.SIGTERM)
        else:
            os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=SETTLE_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    out, err = out_log.read_text(), err_log.read_text()
    assert proc.returncode == 0, err[-3000:]
    assert out.rstrip().endswith("peerwatch demo: stopped"), out[-2000:]
    left = eventually(lambda: not _alive(children)) or _alive(children)
    assert left is True, f"still running after the demo exited: {left}"
    assert "Traceback" not in err, err[-3000:]
