"""`peerwatch serve`: the API server (uvicorn) running `app.server.build_server_app`."""

from __future__ import annotations

import argparse
import logging
import sys

from app.cli.options import port_number
from app.config import Settings
from app.logs import configure_logging
from app.server import SchemaBehind, build_server_app

log = logging.getLogger("peerwatch.serve")


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
