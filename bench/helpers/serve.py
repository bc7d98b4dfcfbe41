"""`peerwatch serve` in a subprocess on a free loopback port: a real server with its own
interpreter (no GIL shared with the client), for the overload test and the refusal bench,
and `serve_tree` for the benches that compare two checkouts in one run."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from bench.helpers.fleet_load import TOKEN


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# A bench's simulated fleet posts from one loopback address, a real one from an address per
# host: the per-address connection limit (app/api/http_guard.py) is off in the benches'
# servers. A bench that measures it passes PEERWATCH_MAX_CONNECTIONS_PER_ADDRESS itself.
FLEET_ENV = {"PEERWATCH_MAX_CONNECTIONS_PER_ADDRESS": "0"}
STARTUP_S = 120.0  # generous: returns as soon as /healthz answers, even on a loaded machine


STOP_S = 120.0  # generous: a loaded machine's server stops its judge and workers in order


def interrupt(proc: subprocess.Popen, within_s: float = STOP_S) -> None:
    """Stop a child `peerwatch` process as Ctrl-C would (SIGINT: it shuts down cleanly);
    killed if it has not ended within `within_s`. Its output pipes, if any, are drained;
    after a kill only for a while: a process of its that outlived it may hold them open."""
    proc.send_signal(signal.SIGINT)
    try:
        proc.communicate(timeout=within_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        try:
            proc.communicate(timeout=10.0)
        except subprocess.TimeoutExpired:
            pass


def wait_for_healthz(base: str, timeout_s: float = STARTUP_S) -> None:
    """Return once `base`/healthz answers 200; RuntimeError after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.1)
    raise RuntimeError(f"server did not come up in {timeout_s:g} s")


def serve_command(port: int, database_url: str) -> list[str]:
    """The command line of a bench's `peerwatch serve`: no local probe, warnings only."""
    return [sys.executable, "-m", "peerwatch.app.cli", "serve", "--port", str(port),
            "--database-url",
            database_url, "--no-local-probe", "--log-level", "warning"]


@contextmanager
def serve_process(database_url: str, data_dir: Path, env: dict[str, str]) -> Iterator[str]:
    """The server's base URL once /healthz answers; stopped with SIGINT on exit, and a
    traceback in its output is an error. Its output goes to `data_dir`/serve.log, not to a
    pipe: a pipe nobody reads while it runs fills (64 KiB of warnings on a loaded machine)
    and then stops every thread that logs."""
    port = free_port()
    data_dir.mkdir(parents=True, exist_ok=True)
    log = data_dir / "serve.log"
    with log.open("ab") as out:
        start = out.tell()
        proc = subprocess.Popen(
            serve_command(port, database_url),
            env={**os.environ, **FLEET_ENV, "PEERWATCH_DATA_DIR": str(data_dir), **env},
            stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for_healthz(base)
        yield base
    finally:
        interrupt(proc)
    with log.open("rb") as said:
        said.seek(start)
        text = said.read().decode(errors="replace")
    if "Traceback" in text:
        raise RuntimeError(f"the server failed ({log}):\n{text[-3000:]}")


def import_root(tree: Path, scratch: Path) -> Path:
    """A folder from which `peerwatch.app` and `peerwatch.probes` import `tree`'s code. The
    editable install maps them to this checkout whatever PYTHONPATH says (a `tree` on the
    path has `app/`, not `peerwatch/app/`), so "before" ran this checkout's code: for
    another tree, a `peerwatch/` of links to its `app/` and `probes/` goes first."""
    root = scratch / "import-root"
    package = root / "peerwatch"
    package.mkdir(parents=True, exist_ok=True)
    for name in ("app", "probes"):
        link = package / name
        if not link.is_symlink():
            link.symlink_to(tree.resolve() / name)
    return root


@contextmanager
def serve_tree(tree: Path, database_url: str, data_dir: Path,
               env: dict[str, str] | None = None) -> Iterator[tuple[str, int]]:
    """`peerwatch serve` running `tree`'s code (`import_root`): (url, pid). `env`: more
    PEERWATCH_* settings (a tree that does not know one ignores it)."""
    port = free_port()
    path = f"{import_root(tree, data_dir)}{os.pathsep}{tree}"
    env = {**os.environ, **FLEET_ENV, "PEERWATCH_DATA_DIR": str(data_dir),
           "PEERWATCH_PROBE_TOKENS": TOKEN, "PYTHONPATH": path, **(env or {})}
    proc = subprocess.Popen(serve_command(port, database_url), cwd=tree, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for_healthz(base, timeout_s=120)
        yield base, proc.pid
    finally:
        interrupt(proc)
