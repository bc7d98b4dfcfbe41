"""How big a benchmark runs: its full size under `make bench`, a smoke size in the test suite.

`PEERWATCH_BENCH_SIZE=smoke` (set by tests/bench/test_bench_smoke.py) shrinks every bench
to seconds: the same code paths, fewer hosts, rows and repeats, so a bench that no longer
runs fails `make test` without the suite timing anything. Figures printed at smoke size
say nothing about speed.
"""

from __future__ import annotations

import os
from typing import TypeVar

T = TypeVar("T")
ENV = "PEERWATCH_BENCH_SIZE"
SMOKE = os.environ.get(ENV, "").strip().lower() == "smoke"


def sized(full: T, smoke: T) -> T:
    """`full` for a real run, `smoke` when the suite only checks that the bench still runs."""
    return smoke if SMOKE else full


def status_for_budget(within: bool) -> int:
    """A bench's exit status from its timing budgets: 1 when missed at full size; 0 at
    smoke size, where the figures are not measurements (the suite must not depend on the
    machine's speed). Correctness checks keep failing at any size."""
    return 0 if within or SMOKE else 1
