"""A real peerwatch server on a loopback port, for tests that deliver reports over HTTP.

`create_app` on a migrated SQLite file, served by uvicorn in a thread (`ServerThread`, the
same class the demo uses). The migrated file is made once per test process and copied.
"""

from __future__ import annotations

import atexit
import shutil
import socket
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import func, select

from peerwatch.app.demo.server import ServerThread
from peerwatch.app.main import create_app
from peerwatch.app.runtime.config import Settings
from peerwatch.app.runtime.credentials import Role, issue
from peerwatch.app.runtime.keyring import ensure_keys, secret_path
from peerwatch.app.store.db import make_engine, upgrade_to_head
from peerwatch.app.store.tables.history import Measurement, ReportRow

TOKEN = "probe-token"
_template: list[Path] = []


def _migrated_template() -> Path:
    if not _template:
        directory = Path(tempfile.mkdtemp(prefix="peerwatch-template-"))
        atexit.register(shutil.rmtree, directory, True)
        path = directory / "peerwatch.db"
        engine = make_engine(Settings(database_url=f"sqlite:///{path}"))
        upgrade_to_head(engine)
        with engine.connect() as conn:
            conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
        engine.dispose()
        _template.append(path)
    return _template[0]


def server_settings(directory: Path, tokens: tuple[str, ...] = (TOKEN,)) -> Settings:
    """Settings of a fresh, migrated SQLite database in `directory`."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "peerwatch.db"
    if not path.exists():
        shutil.copy(_migrated_template(), path)
    return Settings(database_url=f"sqlite:///{path}", data_dir=directory,
                    probe_tokens=list(tokens))


def host_credential(settings: Settings, host: str) -> str:
    """`host`'s probe credential from the server's own secret, as `peerwatch token issue`
    prints it."""
    path = secret_path(settings.data_dir, settings.secret_file)
    return issue(ensure_keys(path), Role.PROBE, host)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def live_server(settings: Settings, port: int = 0) -> Iterator[ServerThread]:
    server = ServerThread(create_app(settings), port=port).start()
    try:
        yield server
    finally:
        server.stop()


@dataclass(frozen=True)
class Stored:
    report_ids: list[uuid.UUID]  # one per stored row: a doubled report would show twice
    dropped: dict[uuid.UUID, int]  # cost.dropped_reports as the server stored it
    measurements: int


def stored(settings: Settings) -> Stored:
    """What the server's database holds, read straight from its tables."""
    engine = make_engine(settings)
    try:
        with engine.connect() as conn:
            rows = conn.execute(select(ReportRow.report_id, ReportRow.dropped_reports)).all()
            measurements = conn.scalar(select(func.count()).select_from(Measurement)) or 0
        return Stored([r[0] for r in rows], {r[0]: r[1] for r in rows}, measurements)
    finally:
        engine.dispose()
