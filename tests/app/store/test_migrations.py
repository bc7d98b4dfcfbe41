"""The schema exists only through migrations: after `upgrade head` the models and the
database agree exactly, on SQLite and on PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect

from peerwatch.app.cli import main
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.db import current_revision, head_revision, make_engine, upgrade_to_head
from peerwatch.app.store.partitions import include_name
from peerwatch.app.store.tables import metadata


def test_models_and_migrations_agree(db_url: str) -> None:
    engine = make_engine(Settings(database_url=db_url))
    try:
        with engine.connect() as conn:
            ctx = MigrationContext.configure(conn, opts={"compare_type": True,
                                                         "include_name": include_name})
            diffs = compare_metadata(ctx, metadata)
        assert diffs == []
        assert current_revision(engine) == head_revision()
    finally:
        engine.dispose()


def test_upgrade_is_idempotent_and_creates_every_table(db_url: str) -> None:
    engine = make_engine(Settings(database_url=db_url))
    try:
        upgrade_to_head(engine)  # already at head: nothing to do, nothing fails
        tables = set(inspect(engine).get_table_names())
        assert set(metadata.tables) <= tables
    finally:
        engine.dispose()


def test_sqlite_connections_use_wal_and_foreign_keys(tmp_path: Path) -> None:
    engine = make_engine(Settings(data_dir=tmp_path / "new-dir", database_url=""))
    try:
        with engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
            assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 30000
    finally:
        engine.dispose()


def test_migrate_command_creates_then_finds_nothing_to_do(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path}/cli.db"
    head = head_revision()
    assert main(["migrate", "--database-url", url]) == 0
    assert f"upgraded empty database -> {head}" in capsys.readouterr().out
    assert main(["migrate", "--database-url", url]) == 0
    assert f"already at revision {head}" in capsys.readouterr().out
