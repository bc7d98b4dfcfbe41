"""One line per kind of repeated warning per minute, with a count of the ones held back.

A busy server answers a fleet's probes 429/503 many times a minute; a probe that logged every
refusal buried its log (the demo printed 884 such lines in 7 minutes). `QuietLog.warning`
logs the first warning of a kind at once, in full, and opens a window of `every_s` for that
kind; the warnings of that kind within the window are only counted, and once it has passed
one line says how many there were: "server busy (HTTP 503) x37 in the last 60 s; latest:
...". While they keep coming that is one line a minute; a kind that was quiet for a whole
window is printed in full at once again.

A window's line is written by the next call of any kind after it ended, by `tick()` (the
outbox calls it on every report it is handed) or by `flush()` (when the server answers again,
and at shutdown), so a count is never lost to warnings that stopped. Kinds are short,
readable labels chosen by the caller ("server busy (HTTP 503)"): the count line starts with
them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

QUIET_S = 60.0


@dataclass
class _Window:
    opened: float  # when the window of this kind began
    held: int = 0  # warnings counted, not written, since
    latest: str = ""  # the newest of them, in full


class QuietLog:
    def __init__(self, log: logging.Logger, clock: Callable[[], float],
                 every_s: float = QUIET_S) -> None:
        self._log = log
        self._clock = clock
        self._every_s = every_s
        self._windows: dict[str, _Window] = {}

    def warning(self, kind: str, message: str, *args: Any) -> bool:
        """Log `message % args` at once unless `kind` has a window open (then it is counted
        for the window's line); True when it was written."""
        now = self._clock()
        self.tick(now)
        window = self._windows.get(kind)
        if window is not None:
            window.held += 1
            window.latest = message % args if args else message
            return False
        self._windows[kind] = _Window(opened=now)
        self._log.warning(message, *args)
        return True

    def tick(self, now: float | None = None) -> None:
        """Write the line of every window that has ended; a kind that warned in it keeps
        a window open (the next minute's count), a quiet one is closed."""
        now = self._clock() if now is None else now
        for kind, window in list(self._windows.items()):
            if now - window.opened < self._every_s:
                continue
            if window.held:
                self._write(kind, window, now)
                self._windows[kind] = _Window(opened=now)
            else:
                del self._windows[kind]

    def flush(self) -> None:
        """Write every count held back now, and close every window (the next warning of any
        kind is written at once): the server answers again, or the probe stops."""
        now = self._clock()
        for kind, window in self._windows.items():
            if window.held:
                self._write(kind, window, now)
        self._windows.clear()

    def _write(self, kind: str, window: _Window, now: float) -> None:
        self._log.warning("%s x%d in the last %.0f s; latest: %s", kind, window.held,
                          now - window.opened, window.latest)
