"""The verdict every judged object carries, and how bad each one is.

It lives in `analysis/` because judging is pure: the analysis modules need the type, and the
API schemas (`app/schemas/`) only show it. `SEVERITY` orders verdicts worst last, so the
worst of several is `max(..., key=SEVERITY.get)`.
"""

from __future__ import annotations

from enum import StrEnum


class Verdict(StrEnum):
    """Worst first in `SEVERITY`; `unknown` means too little data to judge."""

    HEALTHY = "healthy"
    DEGRADED = "degraded"
    DOWN = "down"
    UNKNOWN = "unknown"


SEVERITY: dict[Verdict, int] = {
    Verdict.HEALTHY: 0, Verdict.UNKNOWN: 1, Verdict.DEGRADED: 2, Verdict.DOWN: 3,
}
