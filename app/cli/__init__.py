"""`peerwatch` command line: one subcommand per module in `app/cli/commands/`.

Each module defines `register(subparsers)` adding its parser with `set_defaults(func=run)`,
where `run(args) -> int` returns the exit status. Modules are discovered, so adding a
command never means editing this file. Usage errors (unknown preset, test, GPU index) are
one line on stderr and exit status 2, like argparse's own.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Sequence

from app.cli import commands
from app.logs import configure_logging
from probes.errors import BadProbeRequest

USAGE_ERROR = 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="peerwatch",
        description="Monitor the peer-to-peer fabric of GPU hosts (NVLink, NVSwitch, PCIe).",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{commands.__name__}.{info.name}")
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    configure_logging("warning")  # commands that log more (serve, probe) set their own level
    try:
        return int(args.func(args) or 0)
    except BadProbeRequest as exc:
        print(f"peerwatch {args.command}: error: {exc}", file=sys.stderr)
        return USAGE_ERROR
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
