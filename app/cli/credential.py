"""Which credential a command sends: `--token-file`, else its variable, else its usual file.

Never an option holding the secret itself: a command line is readable by every local user.
"""

from __future__ import annotations

import os
from pathlib import Path

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


def add_token_file(parser, what: str, env_name: str, default_file: str) -> None:
    parser.add_argument("--token-file", type=Path, default=None, metavar="FILE",
                        help=f"file holding the {what} (default: ${env_name} when set, "
                        f"else {default_file})")
