"""The server's credential secret: one file of keys, the first issues, every one verifies.

Credentials are derived from this secret (`app/api/credentials.py`), so the server keeps no
table of them: a host's credential can be issued again at any time from the same file, and
a wiped database leaves every probe's credential valid. Replicas share the file (the same
Kubernetes Secret or file mounted in each); `serve` creates it on first start when absent,
with O_EXCL, so two replicas starting together on one volume still agree on it.

Rotation keeps two keys live at once: `peerwatch token rotate` puts a new key first (new
credentials use it, old ones still verify), `peerwatch token retire` drops every key but
the first once each host holds a credential of the new key.
"""

from __future__ import annotations

import logging
import os
import secrets
import stat
from pathlib import Path

log = logging.getLogger("peerwatch.keyring")

KEY_BYTES = 32
SECRET_FILE_NAME = "credential-secret"


class KeyringError(RuntimeError):
    """The secret file cannot be used: the message says which file and why."""


def secret_path(data_dir: Path, secret_file: Path | None) -> Path:
    return secret_file if secret_file is not None else data_dir / SECRET_FILE_NAME


def _parse(text: str, path: Path) -> list[bytes]:
    keys = [line.strip() for line in text.splitlines() if line.strip()
            and not line.lstrip().startswith("#")]
    try:
        parsed = [bytes.fromhex(k) for k in keys]
    except ValueError:
        raise KeyringError(f"{path}: each line must be a key in hex "
                           "(`peerwatch token rotate` writes one)") from None
    if not parsed or any(len(k) < 16 for k in parsed):
        raise KeyringError(f"{path}: needs at least one key of 16 bytes or more")
    return parsed


def read_keys(path: Path) -> list[bytes]:
    """The keys, newest first; an error naming the file when it is missing or unusable."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise KeyringError(f"{path}: no credential secret here (`peerwatch serve` creates it "
                           "on first start; or set PEERWATCH_SECRET_FILE)") from None
    except OSError as exc:
        raise KeyringError(f"{path}: {exc.strerror}") from None
    if path.stat().st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        log.warning("%s can be read by others than its owner: chmod 600 it", path)
    return _parse(text, path)


def _write_new(path: Path, keys: list[bytes]) -> None:
    """Write `keys` to a new file beside `path`, then move it over: never a half file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write("".join(f"{k.hex()}\n" for k in keys))
    os.replace(tmp, path)


def ensure_keys(path: Path) -> list[bytes]:
    """The keys, creating the file with one new key when there is none yet."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # another replica made it meanwhile: use theirs
            return read_keys(path)
        with os.fdopen(fd, "w") as out:
            out.write(f"{secrets.token_bytes(KEY_BYTES).hex()}\n")
        log.info("created the credential secret %s (share it with every replica)", path)
    return read_keys(path)


def rotate(path: Path) -> list[bytes]:
    """Put a new key first; the old ones keep verifying until retired. A file that is not
    there yet is made with the one new key (how a fleet's shared secret is first made)."""
    keys = [secrets.token_bytes(KEY_BYTES), *(read_keys(path) if path.exists() else [])]
    _write_new(path, keys)
    return keys


def retire(path: Path) -> list[bytes]:
    """Keep only the newest key: credentials of the older ones stop verifying."""
    keys = read_keys(path)[:1]
    _write_new(path, keys)
    return keys
