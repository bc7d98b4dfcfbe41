"""Argument types shared by several commands; a bad value is argparse's one-line usage error."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

MAX_PORT = 65535


def port_number(text: str) -> int:
    """A TCP port, 1-65535 (`--port 70000` fails here, not deep inside the socket layer)."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 1 <= port <= MAX_PORT:
        raise argparse.ArgumentTypeError(f"port {port} is out of range (1-{MAX_PORT})")
    return port


def _number(kind: type, least: float, strict: bool) -> Callable[[str], float]:
    """An argparse type: a finite `kind` above `least` (`strict`) or at least it; anything
    else is argparse's one-line usage error naming the option (`--interval -1`)."""
    what = f"{'an integer' if kind is int else 'a number'} {'>' if strict else '>='} {least:g}"

    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
        if not math.isfinite(value) or value < least or (strict and value == least):
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}")
        return value

    parse.__name__ = what  # argparse names the type in its message when ValueError escapes
    return parse


positive_float = _number(float, 0, strict=True)
non_negative_float = _number(float, 0, strict=False)
positive_int = _number(int, 0, strict=True)
non_negative_int = _number(int, 0, strict=False)


def host_name(text: str) -> str:
    """A host name by the rule every host name follows (`probes.report.HOSTNAME_RULE`),
    in its canonical lowercase spelling: `maintenance a/b` fails here as a usage error."""
    # the wire schema (pydantic) when a host name is read: every command's parser imports
    # this module, and `peerwatch snapshot` in a Slurm prolog must start fast
    from peerwatch.probes.report import valid_hostname

    try:
        return valid_hostname(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


LOG_LEVELS = ["critical", "error", "warning", "info", "debug"]


def add_database_url(parser: argparse.ArgumentParser) -> None:
    """`--database-url`, as `serve` and `judge` take it."""
    parser.add_argument("--database-url", default=None,
                        help="override PEERWATCH_DATABASE_URL (default: from the environment, "
                        "else sqlite under PEERWATCH_DATA_DIR)")


def add_log_level(parser: argparse.ArgumentParser, what: str = "log level") -> None:
    parser.add_argument("--log-level", default="info", choices=LOG_LEVELS,
                        help=f"{what} (default: info)")
