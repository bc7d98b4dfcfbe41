"""`peerwatch serve`: the API server (uvicorn) with the periodic rollup/prune job.

`prepare_database(settings)` creates the schema in an empty database and refuses one left
behind by an older version (run `peerwatch migrate`), so a replica never serves with a
schema its code does not match. `build_server_app(settings)` is the app `serve` runs: other
commands (e.g. a demo with an in-process probe) reuse it and add their own background jobs
to `app.state.background_jobs`.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys

from fastapi import FastAPI
from starlette.concurrency import run_in_threadpool

from app.cli.options import port_number
from app.config import Settings
from app.db import current_revision, head_revision, make_engine, upgrade_to_head
from app.logs import configure_logging
from app.main import create_app
from app.services.retention import run_maintenance

log = logging.getLogger("peerwatch.serve")


class SchemaBehind(RuntimeError):
    """The database has an older schema than this code; `peerwatch migrate` fixes it."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "serve", help="run the API server",
        description="Serve the peerwatch API. Configuration comes from PEERWATCH_* "
        "environment variables (see docs/server.md); an empty database is created.")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to listen on (default: 127.0.0.1)")
    parser.add_argument("--port", type=port_number, default=8000, help="port (default: 8000)")
    parser.add_argument("--database-url", default=None,
                        help="override PEERWATCH_DATABASE_URL (default: from the environment, "
                        "else sqlite under PEERWATCH_DATA_DIR)")
    parser.add_argument("--no-local-probe", action="store_true",
                        help="do not probe this host's GPUs in-process (default: probe them "
                        "when NVML and CuPy work here; see docs/probe-worker.md)")
    parser.add_argument("--log-level", default="info",
                        choices=["critical", "error", "warning", "info", "debug"],
                        help="uvicorn log level (default: info)")
    parser.set_defaults(func=run)


def settings_from_args(args: argparse.Namespace) -> Settings:
    settings = Settings()
    if getattr(args, "database_url", None):
        settings = settings.model_copy(update={"database_url": args.database_url})
    return settings


def prepare_database(settings: Settings) -> str | None:
    """Create the schema in an empty database; raise SchemaBehind for an outdated one."""
    engine = make_engine(settings)
    try:
        revision = current_revision(engine)
        if revision is None:
            upgrade_to_head(engine)
            return current_revision(engine)
        head = head_revision()
        if revision != head:
            raise SchemaBehind(f"the database is at schema revision {revision}, this version "
                               f"needs {head}: run `peerwatch migrate` first")
        return revision
    finally:
        engine.dispose()


async def maintenance_loop(app: FastAPI) -> None:
    """Run the rollup/prune job now and then every `maintenance_interval_s`; a failing run
    is logged and retried at the next interval, never fatal to the server."""
    settings: Settings = app.state.settings
    while True:
        try:
            result = await run_in_threadpool(run_maintenance, app.state.engine, settings)
            log.info("maintenance: %s", result)
        except Exception:  # noqa: BLE001 - the server must keep serving
            log.exception("maintenance run failed; retrying in %.0f s",
                          settings.maintenance_interval_s)
        await asyncio.sleep(settings.maintenance_interval_s)


def build_server_app(settings: Settings) -> FastAPI:
    """The app `serve` runs: schema checked, maintenance scheduled."""
    prepare_database(settings)
    app = create_app(settings)
    app.state.background_jobs.append(maintenance_loop)
    return app


def run(args: argparse.Namespace) -> int:
    import uvicorn

    config = configure_logging(args.log_level)  # every path below, local probe or not
    settings = settings_from_args(args)
    try:
        app = build_server_app(settings)
    except SchemaBehind as exc:
        print(f"peerwatch serve: error: {exc}", file=sys.stderr)
        return 1
    if not settings.probe_tokens:
        log.warning("PEERWATCH_PROBE_TOKENS is empty: every report will be refused (403)")
    if not args.no_local_probe:
        from app.local_probe import attach_local_probe

        attach_local_probe(app, args.host, args.port)
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level,
                log_config=config)
    return 0
