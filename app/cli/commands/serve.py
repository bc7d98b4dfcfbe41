"""`peerwatch serve`: the API server (uvicorn) running `app.server.build_server_app`.

The listening socket is opened here, before uvicorn starts, so an address that cannot be
used is one line naming it, not a page of uvicorn's logs: `--host` that does not resolve,
a port already in use, an address this machine does not have. Exit status: 0 stopped,
1 cannot start (that line: the address, the database or its schema), 2 usage error or a
wrong `PEERWATCH_*` value (one line naming it and what it accepts).
"""

from __future__ import annotations

import argparse
import errno
import logging
import socket
import sys

from peerwatch.app.api.keys import keyring_for
from peerwatch.app.cli.environment import server_settings
from peerwatch.app.cli.options import add_database_url, add_log_level, port_number
from peerwatch.app.runtime.config import Settings
from peerwatch.app.runtime.keyring import KeyringError
from peerwatch.app.runtime.logs import configure_logging
from peerwatch.app.runtime.priority import shorten_turns
from peerwatch.app.server import SchemaBehind, build_server_app

# The event loop's turn on a core (app/runtime/priority.py): the kernel's least. It answers refusals
# and /healthz in well under that, and waits for nobody's whole default slice when it wakes.
LOOP_SLICE_S = 0.0001

log = logging.getLogger("peerwatch.serve")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "serve", help="run the API server",
        description="Serve the peerwatch API. Configuration comes from PEERWATCH_* "
        "environment variables (see docs/server.md); an empty database is created.")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to listen on (default: 127.0.0.1)")
    parser.add_argument("--port", type=port_number, default=8000, help="port (default: 8000)")
    add_database_url(parser)
    parser.add_argument("--no-local-probe", action="store_true",
                        help="do not probe this host's GPUs in-process (default: probe them "
                        "when NVML and CuPy work here; see docs/probe-worker.md)")
    add_log_level(parser, "uvicorn log level")
    parser.set_defaults(func=run)


def settings_from_args(args: argparse.Namespace) -> Settings:
    """Every value checked (a wrong one: ConfigError, one line, exit 2); unknown
    `PEERWATCH_*` names warned about once, not again by the judge process serve starts."""
    return server_settings(getattr(args, "database_url", None),
                           warn=getattr(args, "wake_fd", None) is None)


class CannotListen(Exception):
    """The address `serve` was asked to listen on cannot be used (one line says why)."""


def listen_socket(host: str, port: int) -> socket.socket:
    """A bound, listening TCP socket for host:port (what uvicorn would open itself)."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    except socket.gaierror as exc:
        raise CannotListen(f"--host {host!r} does not resolve to an address ({exc.strerror}); "
                           "pass an IP address or a resolvable name, e.g. 0.0.0.0") from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise CannotListen(f"port {port} on {host} is already in use (another peerwatch "
                               "serve?); stop it or pass --port") from None
        raise CannotListen(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    return sock


def run(args: argparse.Namespace) -> int:
    import uvicorn  # by this command alone: `peerwatch --help` imports every command's module

    settings = settings_from_args(args)  # first: a wrong PEERWATCH_* value, one line
    from peerwatch.app.api.http_guard import guarded_protocol  # it imports uvicorn
    from peerwatch.app.api.http_limits import HttpLimits

    try:  # then a bad address, before any database work or log line
        sock = listen_socket(args.host, args.port)
    except CannotListen as exc:
        print(f"peerwatch serve: error: {exc}", file=sys.stderr)
        return 1
    config = configure_logging(args.log_level)  # every path below, local probe or not
    try:
        app = build_server_app(settings)
        keyring_for(app)  # the secret, made on first start: every credential comes from it
    except (SchemaBehind, KeyringError) as exc:
        sock.close()
        print(f"peerwatch serve: error: {exc}", file=sys.stderr)
        return 1
    if not args.no_local_probe:
        # the probe's agent, imported only when it runs beside the server
        from peerwatch.app.runtime.local_probe import attach_local_probe

        attach_local_probe(app, args.host, args.port)
    server = uvicorn.Server(uvicorn.Config(
        app, host=args.host, port=args.port, log_level=args.log_level, log_config=config,
        http=guarded_protocol(HttpLimits.from_settings(settings)), ws="none"))
    # this thread runs the event loop: short turns, so it answers first when it wakes
    shorten_turns(LOOP_SLICE_S)
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:  # uvicorn re-raises the Ctrl-C it shut down on, as uvicorn.run
        pass                   # swallows it: a clean stop
    return 0
