"""`peerwatch demo`: the server and a simulated fleet with faults and a day of history.

No GPU needed. The server runs on a SQLite file in the data directory; a dozen simulated
hosts of mixed presets run the real probe worker against it over HTTP; faults develop as
it runs; the past day is backfilled in the background. Ctrl-C stops everything.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from peerwatch.app.cli.options import (
    non_negative_float,
    non_negative_int,
    port_number,
    positive_int,
)
from peerwatch.app.demo.fleet import DEFAULT_HOSTS, DEFAULT_RACKS
from peerwatch.app.runtime.logs import configure_logging

# Defaults here, not imported from app.demo.run: building the parser for any command must not
# import the server (FastAPI, SQLAlchemy), which only `demo` itself needs.
DEFAULT_PORT = 8000
DEFAULT_BIND = "127.0.0.1"
DEFAULT_DATA_DIR = Path("data/demo")
DEFAULT_BACKFILL_HOURS = 24.0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "demo", help="run the server with a simulated fleet (no GPU needed)",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=port_number, default=DEFAULT_PORT,
                        help=f"port to serve on (default: {DEFAULT_PORT})")
    parser.add_argument("--bind", default=DEFAULT_BIND,
                        help=f"address to serve on (default: {DEFAULT_BIND})")
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR,
                        help=f"directory for the SQLite database and the fleet's spools "
                             f"(default: {DEFAULT_DATA_DIR})")
    parser.add_argument("--hosts", type=positive_int, default=DEFAULT_HOSTS,
                        help=f"simulated hosts, presets dealt hgx8, h200x2, mesh4, pcie4 in "
                             f"turn (default: {DEFAULT_HOSTS})")
    parser.add_argument("--racks", type=non_negative_int, default=DEFAULT_RACKS,
                        help="simulated GB200 NVL72 racks of 18 compute trays each, one "
                             f"NVLink domain per rack (default: {DEFAULT_RACKS})")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the simulated measurements (default: 0)")
    parser.add_argument("--backfill-hours", type=non_negative_float, default=DEFAULT_BACKFILL_HOURS,
                        help="hours of history to backfill into a new database; 0 for none "
                             f"(default: {DEFAULT_BACKFILL_HOURS:g})")
    parser.add_argument("--admin-token", default=None,
                        help="admin token for silences and acknowledgements (default: a "
                             "random one, printed at start)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    configure_logging("warning")
    logging.getLogger("peerwatch.app.demo").setLevel(logging.INFO)
    # the demo's fleet and server, imported by this command alone (`peerwatch --help`
    # imports every command's module)
    from peerwatch.app.cli.environment import check_server_environment
    from peerwatch.app.demo.run import DemoOptions, run_demo

    check_server_environment()  # the demo's server reads PEERWATCH_* like `serve`
    options = DemoOptions(port=args.port, bind=args.bind, data_dir=args.data_dir,
                          hosts=args.hosts, racks=args.racks, seed=args.seed,
                          backfill_hours=args.backfill_hours,
                          admin_token=args.admin_token)
    return run_demo(options)
