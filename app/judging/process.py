"""The server's side of the judge process: start it, wake it, read its figures, restart it.

`serve` judges in a child process (`peerwatch judge --wake-fd N`,
`app/judging/worker.py`), so the server process does only what a request needs: the
event loop answers refusals and `/healthz` without waiting behind judging for the GIL.
`JudgeProcess` stands where the in-process `JudgeQueue` stands on `app.state.judge_queue`:
`submit(host, arrived)` after each stored report (one non-blocking send on a local
SOCK_SEQPACKET socket: a full socket or a dead child drops the wake, and the child's scan of
the database picks the host up), `load()` for `/readyz` and `/metrics` (the child's latest
figures; its lags go into this app's histogram as they arrive).

`judge_process_job` (`app/judging/shards.py`, a background job of the app; a server
may run several judge children, each judging a shard of the hosts) starts the children, reads
their figures on the event loop, and restarts one within RESTART_S when it dies (counted in
`restarts`); at shutdown each gets SIGTERM, finishes its running judgements and exits.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import datetime

from peerwatch.app.judging.queue import QueueLoad
from peerwatch.app.judging.worker import wake_message
from peerwatch.app.runtime.config import Settings

log = logging.getLogger("peerwatch.serve")

RESTART_S = 1.0  # how often the child is checked, and the pause before a restart
STOP_S = 30.0  # a running judgement's time to finish at shutdown, then it is killed


class JudgeProcess:
    """The judge child of this server process, as the app's judge queue."""

    def __init__(self, settings: Settings, on_lag: Callable[[float], None] | None = None,
                 shard: tuple[int, int] = (0, 1), listening_since: datetime | None = None
                 ) -> None:
        self.settings = settings
        self.shard = shard  # (this child's index, of how many): the hosts it judges
        # the server's start, kept across the child's restarts: a judge restarted while
        # the server listened gives no probe a restart's grace (app/alerting/listening.py)
        self.listening_since = listening_since
        self._on_lag = on_lag
        self._child: subprocess.Popen[bytes] | None = None
        self._sock: socket.socket | None = None
        self._load = QueueLoad(0, 0, settings.judge_workers, 0, 0, None, None, None)
        self._base = (0, 0)  # judged, failed by children that died
        self.restarts = 0
        self.dropped_wakes = 0

    # ----------------------------------------------------------------- lifetime

    def start(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        ours.setblocking(False)
        command = [sys.executable, "-m", "peerwatch.app.cli", "judge", "--wake-fd",
                   str(theirs.fileno())]
        if self.shard[1] > 1:
            command += ["--shard", f"{self.shard[0]}/{self.shard[1]}"]
        if self.listening_since is not None:
            command += ["--listening-since", self.listening_since.isoformat()]
        nice = self.settings.judge_nice
        nice = self.settings.worker_nice if nice is None else nice
        if nice:  # below the server's event loop (app/runtime/priority.py) and, at will, its ingest
            command += ["--nice", str(nice)]
        # a process group of its own: Ctrl-C at a terminal (SIGINT to the foreground group)
        # reaches the server, which stops its judge in order (SIGTERM, then waits), rather
        # than both at once, with the server restarting a judge that had stopped on its own
        # the database URL (it may hold a password) in the child's environment, never in
        # its command line, which every user of the machine can read
        env = {**os.environ, "PEERWATCH_DATABASE_URL": self.settings.database_url}
        self._child = subprocess.Popen(command, pass_fds=(theirs.fileno(),), process_group=0,
                                       env=env)
        theirs.close()
        self._sock = ours
        log.info("judge process %d started", self._child.pid)

    @property
    def running(self) -> bool:
        """Started and not stopped (its socket is open)."""
        return self._sock is not None

    def fileno(self) -> int:
        assert self._sock is not None
        return self._sock.fileno()

    def exited(self) -> int | None:
        """The child's exit status once it has died, else None."""
        return None if self._child is None else self._child.poll()

    def restart(self) -> None:
        self._close_socket()
        self._base = (self._load.judged, self._load.failed)
        self.restarts += 1
        self.start()

    def stop(self, timeout_s: float = STOP_S) -> None:
        child, self._child = self._child, None
        self._close_socket()  # the child sees the socket close and stops too
        if child is None or child.poll() is not None:
            return
        child.terminate()
        try:
            child.wait(timeout_s)
        except subprocess.TimeoutExpired:
            log.warning("judge process %d did not stop in %g s; killed", child.pid, timeout_s)
            child.kill()
            child.wait()

    def _close_socket(self) -> None:
        sock, self._sock = self._sock, None
        if sock is not None:
            sock.close()

    # ----------------------------------------------------------------- the queue's face

    def submit(self, host: str, arrived: float | None = None) -> None:
        """Wake the judge for `host`; never waits (a lost wake is found by the child's scan)."""
        arrived = time.time() if arrived is None else arrived
        try:
            if self._sock is None:
                raise ConnectionError
            self._sock.send(wake_message(host, arrived))
        except OSError:
            self.dropped_wakes += 1

    def load(self) -> QueueLoad:
        load = self._load
        judged, failed = self._base
        return QueueLoad(load.depth, load.in_flight, load.workers, load.judged + judged,
                         load.failed + failed, load.lag_p50_s, load.lag_p99_s, load.lag_max_s,
                         self.restarts)

    def read_figures(self) -> None:
        """What the child sent (called on the event loop when the socket is readable)."""
        while self._sock is not None:
            try:
                message = self._sock.recv(1 << 20)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                message = b""
            if not message:  # the child is gone; the job restarts it
                return
            self._take(message)

    def _take(self, message: bytes) -> None:
        try:
            figures = json.loads(message)
            self._load = QueueLoad(**{**figures["load"], "restarts": 0})
            lags = [float(lag) for lag in figures["lags"]]
        except (ValueError, TypeError, KeyError):
            log.warning("judge process sent figures that do not parse; ignored")
            return
        if self._on_lag is not None:
            for lag in lags:
                self._on_lag(lag)
