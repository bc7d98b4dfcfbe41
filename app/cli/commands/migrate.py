"""`peerwatch migrate`: bring the database to the newest schema (Alembic `upgrade head`)."""

from __future__ import annotations

import argparse

from peerwatch.app.cli.environment import server_settings
from peerwatch.app.store.db import current_revision, head_revision, make_engine, upgrade_to_head


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "migrate",
        help="create or upgrade the database schema",
        description="Apply every pending migration to PEERWATCH_DATABASE_URL "
        "(default: SQLite under PEERWATCH_DATA_DIR, default ./data). Safe to run again.",
    )
    parser.add_argument("--database-url", default=None,
                        help="override PEERWATCH_DATABASE_URL (default: from the environment)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    settings = server_settings(args.database_url)
    engine = make_engine(settings)
    try:
        before = current_revision(engine)
        upgrade_to_head(engine)
        after = current_revision(engine)
    finally:
        engine.dispose()
    where = engine.url.render_as_string(hide_password=True)
    if before == after:
        print(f"{where}: already at revision {after}")
    else:
        print(f"{where}: upgraded {before or 'empty database'} -> {after} (head {head_revision()})")
    return 0
