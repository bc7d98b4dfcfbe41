"""What the migration round-trip tests share: a fresh database on either backend, and
moving it to a revision, up or down."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import Engine

from peerwatch.app.store.db import alembic_config
from tests.app.conftest import throwaway_pg_database


def fresh_url(request: pytest.FixtureRequest, tmp_path: Path,
              name: str = "peerwatch_test") -> Iterator[str]:
    """An empty database of the backend `request.param` names ("sqlite", "postgresql"):
    `name`.db in `tmp_path`, or a throwaway PostgreSQL database named from `name`."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / name}.db"
        return
    with throwaway_pg_database(name) as pg:
        yield pg


def migrate(engine: Engine, revision: str, down: bool = False) -> None:
    with engine.connect() as conn:
        (command.downgrade if down else command.upgrade)(alembic_config(conn), revision)
        conn.commit()
