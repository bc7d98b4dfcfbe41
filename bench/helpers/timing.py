"""The median time of repeated calls: what every benchmark here reports against a reference.

`clock` picks what is measured: `time.perf_counter` for wall time, `time.process_time` for
this process's CPU time (what a shared 2-core machine disturbs least).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def median_ms(fn: Callable[[], object], repeat: int = 5,
              clock: Callable[[], float] = time.perf_counter) -> float:
    """Median milliseconds of `repeat` calls of `fn`, by `clock`."""
    times = []
    for _ in range(repeat):
        start = clock()
        fn()
        times.append((clock() - start) * 1000)
    return statistics.median(times)
