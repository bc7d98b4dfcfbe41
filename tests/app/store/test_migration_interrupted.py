"""A first migration interrupted anywhere (Ctrl-C during a first `serve`, kill -9) leaves a
database that `peerwatch migrate` completes, on SQLite and PostgreSQL: the upgrade is one
transaction, DDL included, so what was done is rolled back, never left half-way.

The interruption is real: a `peerwatch migrate` process stopped by a signal it sends itself
at an exact statement (through an SQLAlchemy event listener its wrapper script adds; the
migration itself runs unchanged), or a real `peerwatch serve` sent SIGINT when its log says
a migration has begun. Then a fresh `peerwatch migrate` must bring the file to head."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import inspect

from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.db import head_revision, make_engine
from tests.app.store import migrating

INTERRUPTED = """
import os, signal, sys
from sqlalchemy import event
from sqlalchemy.engine import Engine
from peerwatch.app.cli import main

when, how = sys.argv[1], getattr(signal, sys.argv[2])

@event.listens_for(Engine, "after_cursor_execute")
def _stop(conn, cursor, statement, parameters, context, executemany):
    if when in statement:  # this statement done, the next never starts
        os.kill(os.getpid(), how)

sys.exit(main(["migrate", "--database-url", sys.argv[3]]))
"""
# Statements inside migrations: the first table of 0001, and 0019's new column (the
# `duplicate column name: state_new` of an interrupted first serve).
POINTS = ["CREATE TABLE hosts", "ADD COLUMN state_new"]


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("PEERWATCH_")}


def _migrate(url: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "peerwatch.app.cli", "migrate",
                           "--database-url", url], capture_output=True, text=True,
                          timeout=300, env=_env())


def _schema(url: str) -> tuple[set[str], str | None]:
    engine = make_engine(Settings(database_url=url))
    try:
        with engine.connect() as conn:
            tables = set(inspect(conn).get_table_names())
            revision = (conn.exec_driver_sql("SELECT version_num FROM alembic_version").scalar()
                        if "alembic_version" in tables else None)
            columns = ({c["name"] for c in inspect(conn).get_columns("judged_tests")}
                       if "judged_tests" in tables else set())
    finally:
        engine.dispose()
    assert "state_new" not in columns
    return tables, revision


def _completes(url: str) -> None:
    done = _migrate(url)
    assert done.returncode == 0, done.stderr
    assert f"-> {head_revision()}" in done.stdout, done.stdout
    tables, revision = _schema(url)
    assert revision == head_revision() and "judged_tests" in tables


@pytest.fixture(params=["sqlite", "postgresql"])
def empty_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A database with nothing in it yet, as before a first `serve`."""
    yield from migrating.fresh_url(request, tmp_path, "peerwatch_interrupted")


@pytest.mark.parametrize("how", ["SIGKILL", "SIGINT"])
@pytest.mark.parametrize("when", POINTS)
def test_a_migration_stopped_mid_way_is_rolled_back_and_completed(when: str, how: str,
                                                                  empty_url: str) -> None:
    stopped = subprocess.run([sys.executable, "-c", INTERRUPTED, when, how, empty_url],
                             capture_output=True, text=True, timeout=300, env=_env())
    if how == "SIGKILL":
        assert stopped.returncode == -signal.SIGKILL, stopped.stderr
    else:  # Ctrl-C: the CLI's quiet exit, no traceback
        assert stopped.returncode == 130 and "Traceback" not in stopped.stderr, stopped.stderr
    assert _schema(empty_url) == (set(), None)  # nothing of it stayed: no table, no revision
    _completes(empty_url)


def test_ctrl_c_during_a_first_serve_leaves_a_database_migrate_completes(
        tmp_path: Path) -> None:
    env = {**_env(), "PEERWATCH_DATA_DIR": str(tmp_path), "PEERWATCH_PROBE_TOKENS": "t"}
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
    proc = subprocess.Popen([sys.executable, "-m", "peerwatch.app.cli", "serve", "--port", port,
                             "--no-local-probe"], env=env, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    seen = []
    for line in proc.stderr:  # the migrations' own log lines, as they start
        seen.append(line)
        if "Running upgrade 0018 -> 0019" in line:
            proc.send_signal(signal.SIGINT)
            break
    rest = proc.communicate(timeout=300)[1]
    assert any("Running upgrade 0018 -> 0019" in s for s in seen), "".join(seen) + rest
    assert proc.returncode == 130, "".join(seen) + rest
    url = f"sqlite:///{tmp_path / 'peerwatch.db'}"
    tables, revision = _schema(url)
    assert (tables, revision) == (set(), None) or revision == head_revision()
    _completes(url)
