"""Which ProbeStale/ProbeClockSkew alerts of a fleet run were false, from what the client did.

Every simulated probe runs on the server's clock, so every ProbeClockSkew is false. A
ProbeStale is true while its probe really was silent (a bench's warm-up leaves each host
silent until the load starts, as a probe that is down would be) and false from shortly after
the probe tried again: a probe that sent a request — stored, refused or timed out — was
heard, and the server must not call it silent. An alert is false when its active interval
reaches into [attempt + GRACE_S, attempt + stale limit - GRACE_S] for any attempt of its
host: GRACE_S lets the server note the attempt and re-judge (a refusal is written within
2 s, a judgement lag of 5 s is the target) and keeps clock rounding out of the count.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

GRACE_S = 10.0
FALSE_ALARMS = ("ProbeStale", "ProbeClockSkew")


@dataclass(frozen=True)
class Raised:
    rule: str
    host: str
    active_from: float  # epoch s
    active_to: float  # resolved, or the time of the count while still active
    description: str


def epoch(at: datetime | None, otherwise: float) -> float:
    return at.timestamp() if at is not None else otherwise


def is_false(alert: Raised, tried: list[float], stale_after_s: float,
             measured_from: float = 0.0) -> bool:
    """`tried`: the host's attempts, ascending (epoch s); only what the alert said from
    `measured_from` on counts."""
    active_from = max(alert.active_from, measured_from)
    if active_from > alert.active_to:
        return False
    if alert.rule != "ProbeStale":
        return True
    # the newest attempt whose quiet window starts before the alert ends
    i = bisect.bisect_right(tried, alert.active_to - GRACE_S) - 1
    return i >= 0 and tried[i] + stale_after_s - GRACE_S > active_from


def false_alarms(raised: Iterable[Raised], tried: dict[str, list[float]],
                 stale_after_s: float, measured_from: float = 0.0) -> list[Raised]:
    return [a for a in raised
            if is_false(a, sorted(tried.get(a.host, [])), stale_after_s, measured_from)]
