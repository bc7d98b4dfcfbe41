"""Which credential a command sends: `--token-file`, else its variable, else its usual file.

Never an option holding the secret itself: a command line is readable by every local user.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from peerwatch.probes.credential_file import read_token

ETC = Path("/etc/peerwatch")


def admin_token_file() -> Path:
    """A person's admin credential: in their own configuration directory."""
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config) / "peerwatch" / "admin-token"


def credential(token_file: Path | None, env_name: str, default_file: Path) -> str:
    if token_file is None and os.environ.get(env_name):
        return os.environ[env_name].strip()
    return read_token(token_file or default_file, env_name, "--token-file")


class _RefuseSecretInArgv(argparse.Action):
    """`--token X` (the old option, or `--token-file` abbreviated): refused, naming where a
    credential goes instead."""

    def __call__(self, parser: argparse.ArgumentParser, *_args: Any, **_kw: Any) -> None:
        parser.error("--token: a credential on the command line is readable by every local "
                     "user (/proc); put it in a file for --token-file, or in the environment")


def add_token_file(parser: argparse.ArgumentParser, help_text: str) -> None:
    parser.add_argument("--token-file", type=Path, default=None, metavar="FILE",
                        help=help_text)
    refuse_token_option(parser)


def refuse_token_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--token", action=_RefuseSecretInArgv, help=argparse.SUPPRESS)


def token_file_help(what: str, env_name: str, default_file: str) -> str:
    return f"file holding the {what} (default: ${env_name} when set, else {default_file})"
