"""Databases and apps for the server tests: every test that takes `db_url` runs twice,
on SQLite and on PostgreSQL.

PostgreSQL: one throwaway database per test session (`peerwatch_test_<random>`, created on
the server at 127.0.0.1:5432, or the port in $PEERWATCH_TEST_PG_PORT, and dropped afterwards),
so helpers running suites side by side never collide; tables are emptied between tests.
SQLite: a migrated file is made once and copied for each test. Where PostgreSQL is
unreachable, `require` skips (developer) or fails (CI).
"""

from __future__ import annotations

import os
import secrets
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from peerwatch.app.main import create_app
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.db import make_engine, upgrade_to_head
from peerwatch.app.store.tables import metadata
from tests.app.judged_client import JudgedClient
from tests.conftest import require

PG_PORT = int(os.environ.get("PEERWATCH_TEST_PG_PORT", "5432"))  # as .ci/prepare-postgres
PG_ADMIN_URL = f"postgresql+psycopg://postgres@127.0.0.1:{PG_PORT}/test"
PROBE_TOKEN = "probe-secret"
ADMIN_TOKEN = "admin-secret"


def _pg_reachable() -> bool:
    try:
        engine = create_engine(PG_ADMIN_URL, connect_args={"connect_timeout": 3})
        with engine.connect():
            pass
        engine.dispose()
        return True
    except Exception:
        return False


@contextmanager
def throwaway_pg_database(prefix: str) -> Iterator[str]:
    """URL of a new, empty PostgreSQL database `<prefix>_<random>`, dropped afterwards."""
    require(_pg_reachable(), f"PostgreSQL at 127.0.0.1:{PG_PORT}")
    name = f"{prefix}_{secrets.token_hex(6)}"
    admin = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield make_url(PG_ADMIN_URL).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture(scope="session")
def pg_database() -> Iterator[str]:
    """URL of a fresh, migrated PostgreSQL database that lives for this test session."""
    with throwaway_pg_database("peerwatch_test") as url:
        engine = make_engine(Settings(database_url=url))
        upgrade_to_head(engine)
        engine.dispose()
        yield url


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("sqlite-template") / "peerwatch.db"
    engine = make_engine(Settings(database_url=f"sqlite:///{path}"))
    upgrade_to_head(engine)
    with engine.connect() as conn:
        conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    engine.dispose()
    return path


def _empty_pg(url: str) -> None:
    engine = create_engine(url)
    tables = ", ".join(f'"{t.name}"' for t in metadata.sorted_tables)
    with engine.begin() as conn:
        conn.execute(text(f"TRUNCATE {tables} RESTART IDENTITY CASCADE"))
    engine.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A migrated, empty database: a copied SQLite file, or the session's PG database."""
    if request.param == "sqlite":
        path = tmp_path / "peerwatch.db"
        shutil.copy(request.getfixturevalue("sqlite_template"), path)
        return f"sqlite:///{path}"
    url: str = request.getfixturevalue("pg_database")
    _empty_pg(url)
    return url


@pytest.fixture
def settings(db_url: str, tmp_path: Path) -> Settings:
    return Settings(database_url=db_url, data_dir=tmp_path, probe_tokens=[PROBE_TOKEN],
                    admin_token=ADMIN_TOKEN)


@pytest.fixture
def client(settings: Settings) -> Iterator[TestClient]:
    with JudgedClient(create_app(settings)) as test_client:
        yield test_client


def probe_headers() -> dict[str, str]:
    """The fleet-wide probe token's: speaks for every host (the opt-in most tests use)."""
    return {"Authorization": f"Bearer {PROBE_TOKEN}"}


def credential(client: Any, role: str, subject: str) -> dict[str, str]:
    """Headers with a credential the server of `client` (or app) issues: `probe` for a
    host, `gate` for a node, `drain` for a controller, `admin` for a person."""
    from peerwatch.app.api.keys import keyring_for
    from peerwatch.app.runtime.credentials import Role, issue

    token = issue(keyring_for(getattr(client, "app", client)).keys(), Role(role), subject)
    return {"Authorization": f"Bearer {token}"}


def judge_later(client: TestClient, seconds: float) -> None:
    """The server's periodic round `seconds` from now (by the server's clock): what turns a
    silent host stale."""
    from datetime import UTC, datetime, timedelta

    from peerwatch.app.judging.service import service_for
    service_for(client.app).evaluate_all(datetime.now(UTC) + timedelta(seconds=seconds))
