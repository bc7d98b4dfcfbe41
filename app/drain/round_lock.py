"""One health-check round per node at a time.

slurmd starts `HealthCheckProgram` every HealthCheckInterval whether or not the last run has
ended, so on a loaded node two rounds can overlap. Each reads the server's marks, then acts:
the later one, reading between the earlier one's drain and its report, finds the node out by
peerwatch with no mark and records an adoption in place of the take-out (the history then
says the server lost its state when it did not). An exclusive, non-blocking `flock` per node
keeps the later round out; it does nothing and says so, and the next interval tries again.

The lock lives in a directory only this user can write (`/run/peerwatch` for root, else a
private one under the temporary directory), so no other account can hold it to stop the
node's health checks; `PEERWATCH_RUN_DIR` names another.
"""

from __future__ import annotations

import fcntl
import os
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class LockUnavailable(RuntimeError):
    """The lock's directory cannot be made or is not this user's own; the words say which."""


def run_dir() -> Path:
    if named := os.environ.get("PEERWATCH_RUN_DIR"):
        return Path(named)
    if os.geteuid() == 0:
        return Path("/run/peerwatch")
    return Path(tempfile.gettempdir()) / f"peerwatch-{os.geteuid()}"


def _own_dir(path: Path) -> Path:
    """`path`, made if missing, refused unless it is a real directory of this user that no
    one else may write."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = path.lstat()
    except OSError as exc:
        raise LockUnavailable(f"{path}: {exc.strerror}") from exc
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
        raise LockUnavailable(f"{path} is not a directory of this user alone (uid "
                              f"{os.geteuid()}, no write for others)")
    return path


@contextmanager
def node_round(node: str, directory: Path | None = None) -> Iterator[bool]:
    """Hold the node's round lock for the block: True if held, False if another round has it."""
    path = _own_dir(directory or run_dir()) / f"drain-round-{node}.lock"
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    except OSError as exc:
        raise LockUnavailable(f"{path}: {exc.strerror}") from exc
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)  # closing drops the lock
