"""Fixtures of the alerting tests: databases, a simulated host, a real Alertmanager."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.orm import Session, sessionmaker

from peerwatch.app.judging.sessions import make_sessionmaker
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.db import make_engine
from tests.app.alerting.real_alertmanager import alertmanager_url
from tests.app.alerting.simhost import SimHost
from tests.app.conftest import ADMIN_TOKEN, PROBE_TOKEN, _empty_pg

__all__ = ["alertmanager_url"]


def _settings(url: str, tmp_path: Path) -> Settings:
    return Settings(database_url=url, data_dir=tmp_path, probe_tokens=[PROBE_TOKEN],
                    admin_token=ADMIN_TOKEN)


@pytest.fixture
def sqlite_settings(tmp_path: Path, sqlite_template: Path) -> Settings:
    """Rule behaviour does not depend on the backend: these tests run on SQLite only."""
    path = tmp_path / "peerwatch.db"
    shutil.copy(sqlite_template, path)
    return _settings(f"sqlite:///{path}", tmp_path)


@pytest.fixture
def pg_settings(tmp_path: Path, pg_database: str) -> Settings:
    _empty_pg(pg_database)
    return _settings(pg_database, tmp_path)


def _sessions(settings: Settings) -> Iterator[sessionmaker[Session]]:
    engine = make_engine(settings)
    try:
        yield make_sessionmaker(engine)
    finally:
        engine.dispose()


@pytest.fixture
def sessions(sqlite_settings: Settings) -> Iterator[sessionmaker[Session]]:
    yield from _sessions(sqlite_settings)


@pytest.fixture
def pg_sessions(pg_settings: Settings) -> Iterator[sessionmaker[Session]]:
    yield from _sessions(pg_settings)


@pytest.fixture
def host(sessions: sessionmaker[Session], sqlite_settings: Settings) -> SimHost:
    return SimHost(sessions, sqlite_settings)
