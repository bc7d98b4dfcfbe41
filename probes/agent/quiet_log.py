"""One line per kind of repeated warning per minute, with a count of the ones held back.

A busy server answers a fleet's probes 429/503 many times a minute; a probe that logged every
refusal buried its log (the demo printed 884 such lines in 7 minutes). `QuietLog.warning`
logs the first warning of a kind at once, holds back the others of that kind for
`every_s`, and the next line of that kind says how many it stood for ("... (and 37 more like
it in the last 60 s)"). Kinds are short keys chosen by the caller, e.g. "unavailable 503".
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

QUIET_S = 60.0


class QuietLog:
    def __init__(self, log: logging.Logger, clock: Callable[[], float],
                 every_s: float = QUIET_S) -> None:
        self._log = log
        self._clock = clock
        self._every_s = every_s
        self._last: dict[str, float] = {}  # kind -> when its last line was written
        self._held: dict[str, int] = {}  # kind -> warnings held back since

    def warning(self, kind: str, message: str, *args: Any) -> bool:
        """Log `message % args` unless a line of `kind` went out within `every_s`; True
        when it was written."""
        now = self._clock()
        last = self._last.get(kind)
        if last is not None and now - last < self._every_s:
            self._held[kind] = self._held.get(kind, 0) + 1
            return False
        held = self._held.pop(kind, 0)
        if held:
            message += " (and %d more like it in the last %.0f s)"
            args = (*args, held, now - last if last is not None else self._every_s)
        self._last[kind] = now
        self._log.warning(message, *args)
        return True
