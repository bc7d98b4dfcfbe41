"""Alembic environment: runs peerwatch's migrations on SQLite or PostgreSQL.

The URL comes from `app.runtime.config.Settings` (PEERWATCH_DATABASE_URL), or, when the migrations
run programmatically (`app.store.db.upgrade_to_head`), from the engine or connection the caller put
in `config.attributes`. `render_as_batch` lets later migrations alter SQLite tables (which
cannot ALTER most things) by copy-and-move.
"""

from __future__ import annotations

from logging.config import fileConfig
from typing import Any

from alembic import context
from sqlalchemy import Connection

from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.base import UtcDateTime
from peerwatch.app.store.db import make_engine, normalize_url
from peerwatch.app.store.partitions import include_name
from peerwatch.app.store.tables import metadata

config = context.config
if config.config_file_name is not None and not config.attributes.get("skip_logging"):
    fileConfig(config.config_file_name, disable_existing_loggers=False)

target_metadata = metadata


def render_item(type_: str, obj: Any, autogen_context: Any) -> str | bool:
    """Write our UtcDateTime as the plain type it stores, so migrations need no app import."""
    if type_ == "type" and isinstance(obj, UtcDateTime):
        return "sa.DateTime(timezone=True)"
    return False


def _configure(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        compare_type=True,
        render_as_batch=connection.dialect.name == "sqlite",
        render_item=render_item,
        include_name=include_name,
    )


def run_migrations_offline() -> None:
    """Emit SQL to stdout (`alembic upgrade head --sql`) without a database."""
    context.configure(
        url=str(normalize_url(Settings().database_url)),
        target_metadata=target_metadata,
        literal_binds=True,
        compare_type=True,
        render_item=render_item,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _configure(connection)
        with context.begin_transaction():
            context.run_migrations()
        return
    engine = config.attributes.get("engine") or make_engine(Settings())
    with engine.connect() as conn:
        _configure(conn)
        with context.begin_transaction():
            context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
