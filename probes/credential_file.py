"""Reading a credential from a file: how every client of the server gets its secret.

A credential on a command line is readable by every local user (`/proc/<pid>/cmdline`,
`ps`), so the probe, the snapshot hook, the gate and the drain controller take theirs from
the environment or from a file only readable by them.
"""

from __future__ import annotations

import stat
import sys
from pathlib import Path

from peerwatch.probes.errors import BadProbeRequest


def read_token(path: Path | None, env_name: str, option: str) -> str:
    """The first line of `path`; a one-line error naming the file, the option and the
    variable when there is none to read."""
    if path is None:
        raise BadProbeRequest(f"no credential: set {env_name} or pass {option}")
    try:
        words = path.read_text().split()
    except FileNotFoundError:
        raise BadProbeRequest(f"no credential: {path} does not exist (set {env_name} or pass "
                              f"{option}; `peerwatch token issue` makes one)") from None
    except OSError as exc:
        raise BadProbeRequest(f"credential file {path}: {exc.strerror}") from None
    if not words:
        raise BadProbeRequest(f"credential file {path} is empty")
    token = words[0]
    if path.stat().st_mode & (stat.S_IROTH | stat.S_IWOTH):
        print(f"warning: {path} is readable by every user: chmod 600 it", file=sys.stderr)
    return token
