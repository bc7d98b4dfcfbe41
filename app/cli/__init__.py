"""`peerwatch` command line: one subcommand per module in `app/cli/commands/`.

Each module defines `register(subparsers)` adding its parser with `set_defaults(func=run)`,
where `run(args) -> int` returns the exit status. Modules are discovered, so adding a
command never means editing this file. Usage errors (unknown preset, test, GPU index) are
one line on stderr and exit status 2, like argparse's own, and so is a `PEERWATCH_*`
setting of the wrong type or out of range (`app.cli.environment`); other user errors (no GPUs, an
unreachable database, see `app.cli.errors`) one line and status 1. A command whose module
needs the server's packages still shows in a probe-only install and says what to install.
Only the module of the command being run is imported (`peerwatch snapshot` in a Slurm prolog
must not pay for FastAPI and SQLAlchemy); `peerwatch --help` or an unknown command imports
them all to list them. Output cut short by a closed pipe (`peerwatch bench --json | head`)
ends quietly with status 141, as SIGPIPE ends `cat` or `grep`.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import signal
import sys
from collections.abc import Sequence

from peerwatch.app.cli import commands
from peerwatch.app.cli.errors import (
    SERVER_EXTRA_HINT,
    configuration_error,
    explain,
    missing_server_module,
)
from peerwatch.app.runtime.logs import configure_logging
from peerwatch.probes.errors import BadProbeRequest

USAGE_ERROR = 2
USER_ERROR = 1
BROKEN_PIPE = 128 + signal.SIGPIPE


def command_names() -> list[str]:
    return sorted(info.name for info in pkgutil.iter_modules(commands.__path__))


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or of the command `only` alone."""
    parser = argparse.ArgumentParser(
        prog="peerwatch",
        description="Monitor the peer-to-peer fabric of GPU hosts (NVLink, NVSwitch, PCIe).",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in command_names():
        if only is not None and name != only:
            continue
        try:
            module = importlib.import_module(f"{commands.__name__}.{name}")
        except ModuleNotFoundError as exc:
            if not missing_server_module(exc):
                raise
            _register_unavailable(sub, name, exc)
            continue
        module.register(sub)
    return parser


def _register_unavailable(sub: argparse._SubParsersAction, name: str,
                          exc: ModuleNotFoundError) -> None:
    """A stand-in for a command this install cannot run: it takes any arguments and fails
    with the one line `explain` gives for the missing module."""
    parser = sub.add_parser(name, help=f"(needs the server's packages: {SERVER_EXTRA_HINT})")

    def unavailable(_args: argparse.Namespace) -> int:
        raise exc

    parser.set_defaults(func=unavailable, takes_any_arguments=True)


def _quiet_broken_pipe() -> int:
    """The reader went away: point stdout at /dev/null so the exit flush cannot fail too."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return BROKEN_PIPE


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(words[0] if words and words[0] in command_names() else None)
    args, unknown = parser.parse_known_args(words)
    if unknown and not getattr(args, "takes_any_arguments", False):
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    configure_logging("warning")  # commands that log more (serve, probe) set their own level
    try:
        return int(args.func(args) or 0)
    except BadProbeRequest as exc:
        print(f"peerwatch {args.command}: error: {exc}", file=sys.stderr)
        return USAGE_ERROR
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return _quiet_broken_pipe()
    except Exception as exc:
        wrong = configuration_error(exc)
        if wrong is not None:
            print(f"peerwatch {args.command}: error: {wrong}", file=sys.stderr)
            return USAGE_ERROR
        message = explain(exc)
        if message is None:
            raise
        print(f"peerwatch {args.command}: error: {message}", file=sys.stderr)
        return USER_ERROR


if __name__ == "__main__":
    sys.exit(main())
