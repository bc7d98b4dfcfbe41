"""Engines, sessions and migrations.

SQLite (the default) is a file in WAL mode with a busy timeout and foreign keys on, set on
every connection by a connect event, so readers never block the ingest writer and a second
process waits instead of failing. PostgreSQL goes through psycopg 3
(`postgresql+psycopg://`); a plain `postgresql://` URL is upgraded to it. Engines hide SQL
parameters from their errors, so a failed insert never prints report rows into a log.

The schema exists only through Alembic: `upgrade_to_head(engine)` runs the migrations in
`migrations/` programmatically (what `peerwatch migrate` and `serve` call).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson
from sqlalchemy import Connection, Engine, create_engine, event, inspect, text
from sqlalchemy.engine import URL, make_url

from peerwatch.app.runtime.assets import asset_dir
from peerwatch.app.runtime.config import Settings

MIGRATIONS_DIR = asset_dir("migrations")


def normalize_url(url: str | URL) -> URL:
    """`postgresql://` and `postgres://` mean psycopg 3 here (the only driver we install)."""
    parsed = make_url(url)
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed


def json_loads(text: str | bytes) -> Any:
    """JSON columns read with orjson (~4x the stdlib's parse: a judgement reads the facts
    of every judged row of its host); the stdlib's for what orjson refuses (a NaN written
    by an older release into SQLite's JSON text)."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


# An execution option: PostgreSQL sends the statement's rows in binary, not text. A
# judgement reads ~2,000 times, floats and packed states of its host's judged rows and new
# results: the backend formats none of them as text (a state's bytea went as hex, twice
# its size) and psycopg parses none. The same Python values either way (psycopg's loaders
# of each format; JSON through the engine's `json_deserializer` in both).
BINARY_RESULTS = "peerwatch_binary_results"


def make_engine(settings: Settings) -> Engine:
    url = normalize_url(settings.database_url)
    if url.get_backend_name() == "sqlite":
        return _sqlite_engine(url, settings.sqlite_busy_timeout_ms)
    from psycopg.pq import Format  # PostgreSQL only: a SQLite server never loads psycopg

    engine = create_engine(url, pool_size=settings.db_pool_size, pool_pre_ping=True,
                           hide_parameters=True, json_deserializer=json_loads,
                           connect_args={"options": _utc_session(url)})

    @event.listens_for(engine, "before_cursor_execute")
    def _binary_results(_conn: Connection, cursor: Any, _statement: str, _parameters: Any,
                        context: Any, _executemany: bool) -> None:
        if context is not None and context.execution_options.get(BINARY_RESULTS):
            cursor.format = Format.BINARY

    return engine


def _utc_session(url: URL) -> str:
    """libpq's `options` with the session's TimeZone set to UTC (after any the URL sets).

    psycopg returns a timestamptz in the session's zone: under a server's default `Etc/UTC`
    that is a `ZoneInfo`, converted to it with `astimezone` and back to UTC by `UtcDateTime`
    (~2,400 stored times each judgement of an 8-GPU host reads); in `UTC` it is
    `datetime.UTC` itself, which both conversions leave as it is. Nothing here reads a
    time in the session's zone (every time is stored and compared as an instant)."""
    given = url.query.get("options", "")
    given = given if isinstance(given, str) else " ".join(given)
    return f"{given} -c TimeZone=UTC".strip()


def _sqlite_engine(url: URL, busy_timeout_ms: int) -> Engine:
    if url.database and url.database != ":memory:":
        Path(url.database).parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(url, connect_args={"check_same_thread": False},
                           hide_parameters=True, json_deserializer=json_loads)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        cursor = dbapi_conn.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    return engine


# Any constant works; it only has to be the same in every replica.
MIGRATION_LOCK_ID = 0x7065_6572  # "peer"


def alembic_config(connection: Connection | None = None) -> Any:
    """An Alembic Config for peerwatch's migrations; with `connection`, migrations run on it.

    Built in code, not read from alembic.ini (which serves the plain `alembic` command in a
    checkout and is not installed), so an installed wheel migrates the same way."""
    from alembic.config import Config  # only where migrations run: start-up of the rest

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.set_main_option("path_separator", "os")
    cfg.attributes["skip_logging"] = True  # keep the caller's logging as it is
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


def upgrade_to_head(engine: Engine) -> None:
    """Bring the database behind `engine` to the newest migration (a no-op when it is).

    All of it in one transaction, on both databases: an upgrade interrupted anywhere (Ctrl-C
    during a first `serve`, a kill, a full disk) leaves the database as it was, and the next
    `migrate` or `serve` runs it whole. On PostgreSQL an advisory lock serialises replicas
    that start together on an empty database: the first migrates, the others wait and then
    find nothing to do; on SQLite the transaction's write lock does the same.
    """
    from alembic import command  # only where migrations run: start-up of the rest

    with engine.connect() as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_lock(:k)"), {"k": MIGRATION_LOCK_ID})
            conn.commit()
        try:
            with _sqlite_transactional_ddl(conn):
                command.upgrade(alembic_config(conn), "head")
                conn.commit()
        finally:
            if conn.dialect.name == "postgresql":
                conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": MIGRATION_LOCK_ID})
                conn.commit()


@contextmanager
def _sqlite_transactional_ddl(conn: Connection) -> Iterator[None]:
    """On SQLite, the migrations' DDL inside the transaction too (a no-op elsewhere).

    Python's sqlite3 begins a transaction only before INSERT/UPDATE/DELETE, so CREATE, ALTER
    and DROP ran each on its own, committed at once: an upgrade stopped half-way left a
    schema no migration could continue (`duplicate column name: state_new`). With the
    driver's own transaction handling off, `BEGIN IMMEDIATE` opens one that covers every
    statement (SQLite's DDL is transactional) and takes the write lock first, so a second
    migrator waits and then finds the work done. Alembic sees a transaction already open
    and runs every migration inside it."""
    if conn.dialect.name != "sqlite":
        yield
        return
    driver: Any = conn.connection.driver_connection  # a sqlite3.Connection
    before = driver.isolation_level
    driver.isolation_level = None
    try:
        conn.exec_driver_sql("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            conn.rollback()
            raise
    finally:
        driver.isolation_level = before


def head_revision() -> str | None:
    from alembic.script import ScriptDirectory  # only where migrations run

    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def current_revision(engine: Engine) -> str | None:
    """The schema revision stored in the database (None when empty). Read with one plain
    query, not Alembic's MigrationContext, which logs two lines per call (`/healthz`)."""
    with engine.connect() as conn:
        if not inspect(conn).has_table("alembic_version"):
            return None
        revision: str | None = conn.scalar(text("SELECT version_num FROM alembic_version"))
        return revision
