"""The app's keyring: the secret file's keys, read again when the file changes.

`peerwatch token rotate` on a running server's file takes effect at its next request (the
file's mtime is checked, one stat), so rotation needs no restart.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

from peerwatch.app.runtime.keyring import ensure_keys, secret_path

log = logging.getLogger("peerwatch.credentials")


class Keyring:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._keys = ensure_keys(path)
        self._mtime = path.stat().st_mtime_ns

    def keys(self) -> list[bytes]:
        try:
            mtime = self.path.stat().st_mtime_ns
        except OSError:  # gone meanwhile: keep what was read, never lock every probe out
            return self._keys
        if mtime != self._mtime:
            with self._lock:
                self._keys, self._mtime = ensure_keys(self.path), mtime
        return self._keys


def keyring_for(app: Any) -> Keyring:
    """The app's keyring, made on first use (the secret file created if absent)."""
    keyring: Keyring | None = getattr(app.state, "keyring", None)
    if keyring is None:
        settings = app.state.settings
        keyring = Keyring(secret_path(settings.data_dir, settings.secret_file))
        app.state.keyring = keyring
    return keyring


def check_credentials(app: Any) -> None:
    """At start: a secret file that exists is read now (a broken one stops the server here,
    not at a probe's first report), and fleet-wide probe tokens are warned about."""
    settings = app.state.settings
    if secret_path(settings.data_dir, settings.secret_file).exists():
        keyring_for(app)
    if settings.probe_tokens:
        log.warning("PEERWATCH_PROBE_TOKENS is set: each of its %d fleet-wide token(s) may "
                    "report as ANY host; give each probe its own credential "
                    "(`peerwatch token issue --host H`) and unset it (docs/security.md)",
                    len(settings.probe_tokens))
