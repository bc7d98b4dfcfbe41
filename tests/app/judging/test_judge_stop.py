"""The judge process stops its own threads before it returns: a scan (or round) under way
when it is told to stop finishes first, and a round begins no further host once told. A
thread left doing database work while the interpreter exits checks connections in and out
(each a `weakref.finalize` in SQLAlchemy 2.1) under CPython 3.11's exit hook, which then
fails iterating its finalizers ("dictionary changed size during iteration", printed as a
traceback by every judge process that met it)."""

from __future__ import annotations

import shutil
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

from peerwatch.app.ingest.rows import ingest
from peerwatch.app.judging.worker import JudgeWorker
from peerwatch.app.runtime.config import Settings
from tests.app.conftest import PROBE_TOKEN
from tests.app.factory import sweep

OUTLIVE_S = 5.0  # how long the scan waits to see run() return: ages, for an unjoined stop
START_S = 60.0  # generous: the scan thread's first scan comes after judge_scan_s


class ScanUnderWayAtStop(JudgeWorker):
    """A judge whose scan thread's first scan is under way when the stop comes: it waits
    for the stop, scans the database as every scan does, then waits (up to OUTLIVE_S) to
    see run() return while it still runs."""

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self.runner: threading.Thread | None = None
        self.scanner: threading.Thread | None = None
        self.entered = threading.Event()
        self.returned = threading.Event()
        self.outlived: list[bool] = []

    def _scan_once(self) -> int:
        if threading.current_thread() is self.runner or self.entered.is_set():
            return super()._scan_once()
        self.scanner = threading.current_thread()
        self.entered.set()
        self.stopping.wait()
        found = super()._scan_once()
        self.outlived.append(self.returned.wait(OUTLIVE_S))
        return found

    def run_and_say(self) -> None:
        self.run()
        self.returned.set()


def _settings(tmp_path: Path, sqlite_template: Path) -> Settings:
    db = tmp_path / "peerwatch.db"
    shutil.copy(sqlite_template, db)
    return Settings(database_url=f"sqlite:///{db}", data_dir=tmp_path,
                    probe_tokens=[PROBE_TOKEN], judge_scan_s=0.05)


def test_a_scan_under_way_at_the_stop_ends_before_the_judge_does(
        tmp_path: Path, sqlite_template: Path) -> None:
    settings = _settings(tmp_path, sqlite_template)
    judge = ScanUnderWayAtStop(settings)
    judge.runner = threading.Thread(target=judge.run_and_say, name="test-judge-run")
    judge.runner.start()
    try:
        assert judge.entered.wait(START_S), "the scan thread never scanned"
    finally:
        judge.stopping.set()
        judge.runner.join(START_S + OUTLIVE_S)
    assert not judge.runner.is_alive()
    assert judge.scanner is not None and not judge.scanner.is_alive()
    assert judge.outlived == [False]  # run() had not returned while the scan still ran


def test_a_round_told_to_stop_begins_no_further_host(tmp_path: Path,
                                                     sqlite_template: Path) -> None:
    """A round over a large fleet takes a while: the stop waits for one host, not all."""
    settings = _settings(tmp_path, sqlite_template)
    judge = JudgeWorker(settings)
    try:
        now = datetime.now(UTC)
        with judge.service.sessions() as session:
            for host in ("node-a", "node-b"):
                ingest(session, sweep(host=host, at=now - timedelta(minutes=1)), settings, now)
        stopping = threading.Event()
        stopping.set()
        assert judge.service.evaluate_all(stopping=stopping) == []
        assert len(judge.service.evaluate_all(stopping=threading.Event())) == 2
    finally:
        judge.service.close()
        judge.engine.dispose()
