"""Argument types shared by several commands; a bad value is argparse's one-line usage error."""

from __future__ import annotations

import argparse

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


def host_name(text: str) -> str:
    """A host name by the rule every host name follows (`probes.report.HOSTNAME_RULE`),
    in its canonical lowercase spelling: `maintenance a/b` fails here as a usage error."""
    from probes.report import valid_hostname

    try:
        return valid_hostname(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
