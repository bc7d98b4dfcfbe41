"""A pair's baseline: the robust centre and spread of its own recent healthy history.

Median and median absolute deviation (MAD), because a handful of odd samples (a job that
slipped past the contention check, a probe that ran while clocks were ramping) must not move
what "normal" means for that pair. Which samples count is decided by the caller's query:
successful, uncontended, within the window; `healthy_values` also drops samples so far below
the topology's expectation that they are a fault, not a normal to learn.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from peerwatch.app.analysis.expected import ratio
from peerwatch.probes.report import TestName

# Scales MAD to a standard-deviation estimate for normally distributed noise.
MAD_TO_SIGMA = 1.4826


@dataclass(frozen=True)
class BaselineStats:
    value: float  # median
    spread: float  # 1.4826 x MAD, in the value's unit
    n: int


def robust_baseline(values: Sequence[float], min_samples: int) -> BaselineStats | None:
    """Median and scaled MAD of `values`, or None with fewer than `min_samples`."""
    if len(values) < max(1, min_samples):
        return None
    centre = statistics.median(values)
    mad = statistics.median(abs(v - centre) for v in values)
    return BaselineStats(value=centre, spread=MAD_TO_SIGMA * mad, n=len(values))


def healthy_values(test: TestName, values: Iterable[float], expected: float | None,
                   floor_ratio: float) -> list[float]:
    """The values a baseline may learn from: not below `floor_ratio` of the expectation."""
    if expected is None:
        return list(values)
    return [v for v in values if ratio(test, v, expected) >= floor_ratio]
