"""Parts of the fault drill (bench/faults.py): a real `peerwatch serve` process that can be
killed, a private throwaway PostgreSQL cluster that can be restarted, an in-process agent
outbox, tmpfs mounts, and what the database holds.

The shared PostgreSQL at 127.0.0.1:5432 is never restarted: the PostgreSQL case runs its
own cluster (initdb as the `postgres` user, on a free port, in a temporary directory).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import httpx
from sqlalchemy import create_engine, func, select, text, union_all

from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.db import make_engine
from peerwatch.app.store.tables.history import ReportRow
from peerwatch.app.store.tables.received import ReceivedReport
from peerwatch.probes.agent.outbox import Outbox
from peerwatch.probes.agent.sender import Backoff, Sender
from peerwatch.probes.agent.spool import AnySpool
from peerwatch.probes.report import Report, utcnow
from peerwatch.probes.sim.simulated import SimulatedFabric
from peerwatch.probes.sweep import SweepOptions, build_report

TOKEN = "drill-token"
ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """`peerwatch serve --no-local-probe` in a subprocess, on a fixed port across restarts."""

    def __init__(self, database_url: str, port: int | None = None) -> None:
        self.database_url = database_url
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, wait_s: float = 120.0) -> Server:
        env = {**os.environ, "PEERWATCH_DATABASE_URL": self.database_url,
               "PEERWATCH_PROBE_TOKENS": TOKEN}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "peerwatch.app.cli", "serve", "--port", str(self.port),
             "--no-local-probe", "--log-level", "error"],
            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return self
            except httpx.TransportError:
                time.sleep(0.1)
        raise RuntimeError(f"server on {self.url} did not come up in {wait_s:g} s")

    def kill(self) -> None:
        """SIGKILL: no shutdown, no flushing, requests in flight cut off."""
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None


@contextmanager
def serving(database_url: str) -> Iterator[Server]:
    server = Server(database_url).start()
    try:
        yield server
    finally:
        server.stop()


@dataclass(frozen=True)
class Stored:
    distinct: int  # report_ids the database holds
    rows: int  # report rows: more than `distinct` would be a doubled report


def stored(database_url: str) -> Stored:
    """The reports the database holds whole: expanded into rows (`reports`) or answered and
    not yet expanded (`received_reports`, `serve`): a report is in one or the other, so a
    report_id in both, or twice in either, is a doubled report."""
    ids = union_all(select(ReportRow.report_id), select(ReceivedReport.report_id)).subquery()
    engine = make_engine(Settings(database_url=database_url))
    try:
        with engine.connect() as conn:
            rows = conn.scalar(select(func.count()).select_from(ids)) or 0
            distinct = conn.scalar(select(func.count(func.distinct(ids.c.report_id)))) or 0
        return Stored(distinct, rows)
    finally:
        engine.dispose()


@contextmanager
def sqlite_url() -> Iterator[str]:
    with tempfile.TemporaryDirectory(prefix="peerwatch-drill-") as tmp:
        yield f"sqlite:///{tmp}/drill.db"


class Reports:
    """Fresh reports of one simulated 2-GPU host: one real sweep, re-stamped for each."""

    def __init__(self, hostname: str = "drill-host") -> None:
        fabric = SimulatedFabric("h200x2", seed=3, hostname=hostname)
        try:
            self.template = build_report(fabric, options=SweepOptions(timeout_s=None))
        finally:
            fabric.close()

    def new(self, hours_ahead: float = 0.0) -> Report:
        at = utcnow() + timedelta(hours=hours_ahead)
        return self.template.model_copy(update={
            "report_id": uuid.uuid4(), "started_at": at, "finished_at": at})


def outbox(url: str, spool: AnySpool) -> Outbox:
    """The agent's own delivery code, with short backoffs so the drill runs in seconds."""
    return Outbox(Sender(url, TOKEN, 5.0), spool, Backoff(0.2, 2.0), time.monotonic)


def drain(box: Outbox, within_s: float = 120.0) -> None:
    """Replay until the spool is empty (or `within_s` passed), as the agent's loop does."""
    deadline = time.monotonic() + within_s
    while len(box.spool) and time.monotonic() < deadline:
        due = box.replay_due_at()
        if due is not None and time.monotonic() >= due:
            box.replay()
        time.sleep(0.05)


@contextmanager
def tmpfs(path: Path, options: str) -> Iterator[Path | None]:
    """A tmpfs mounted at `path` (None where mounting is not permitted)."""
    path.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)],
                          capture_output=True, check=False)
    if done.returncode != 0:
        yield None
        return
    try:
        yield path
    finally:
        subprocess.run(["umount", str(path)], check=False)


# --------------------------------------------------------------------------- PostgreSQL


def pg_tool(name: str) -> str | None:
    """PostgreSQL's `initdb` or `pg_ctl`: on the PATH, else Debian's newest
    /usr/lib/postgresql/<version>/bin (the packages put only the clients on the PATH)."""
    found = shutil.which(name)
    if found:
        return found
    versions = sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"),
                      key=lambda p: int(p.parts[-3]) if p.parts[-3].isdigit() else 0)
    return str(versions[-1]) if versions else None


def private_cluster_possible() -> bool:
    """initdb and pg_ctl are here, and (as root) `runuser` to run them as `postgres`."""
    return all(pg_tool(t) for t in ("initdb", "pg_ctl")) and (
        os.geteuid() != 0 or shutil.which("runuser") is not None)


def _as_postgres(tool: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`tool` run as `postgres` when we are root (initdb refuses root), else as ourselves."""
    command = [pg_tool(tool) or tool, *args]
    if os.geteuid() == 0:
        command = ["runuser", "-u", "postgres", "--", *command]
    return subprocess.run(command, capture_output=True, text=True, check=False)


class PrivateCluster:
    """A throwaway PostgreSQL cluster of our own, so restarting it disturbs nobody."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="peerwatch-pg-"))
        if os.geteuid() == 0:
            shutil.chown(self.dir, "postgres", "postgres")
        self.port = free_port()
        self.data = self.dir / "data"
        self.url = f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/drill"

    def _ctl(self, *args: str) -> None:
        done = _as_postgres("pg_ctl", "-D", str(self.data), "-l", str(self.dir / "log"),
                            "-w", "-o", f"-p {self.port} -k {self.dir} -c fsync=off", *args)
        if done.returncode != 0:
            raise RuntimeError(f"pg_ctl {' '.join(args)}: {done.stderr or done.stdout}")

    def start(self) -> PrivateCluster:
        done = _as_postgres("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres")
        if done.returncode != 0:
            raise RuntimeError(f"initdb: {done.stderr.strip()[-300:]}")
        self._ctl("start")
        admin = create_engine(self.url.replace("/drill", "/postgres"),
                              isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text("CREATE DATABASE drill"))
        admin.dispose()
        return self

    def restart(self, down_s: float = 3.0) -> None:
        """Stop (fast: connections cut), stay down `down_s`, start again; 0: `pg_ctl
        restart -m fast`."""
        if not down_s:
            self._ctl("restart", "-m", "fast")
            return
        self._ctl("stop", "-m", "fast")
        time.sleep(down_s)
        self._ctl("start")

    def remove(self) -> None:
        try:
            self._ctl("stop", "-m", "immediate")
        except RuntimeError:
            pass
        shutil.rmtree(self.dir, ignore_errors=True)

