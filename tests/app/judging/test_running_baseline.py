"""A running state's baseline (app/judging/running.py): the median of its kept healthy
values and their MAD, a block counting as BLOCK values at its median (its MAD for the
spread), exactly as statistics.median of every value spelled out would give it."""

from __future__ import annotations

import random
import statistics

from peerwatch.app.analysis.baseline import MAD_TO_SIGMA
from peerwatch.app.judging.running import BLOCK, Running


def _spelled_out(state: Running) -> tuple[float, float, int]:
    values = [m for m, _, _ in state.blocks for _ in range(BLOCK)] + list(state.part)
    centre = statistics.median(values)
    spread = statistics.median([d for _, d, _ in state.blocks for _ in range(BLOCK)]
                               + [abs(v - centre) for v in state.part])
    return centre, MAD_TO_SIGMA * spread, len(values)


def test_the_baseline_is_the_median_of_every_value_spelled_out() -> None:
    rng = random.Random(19)
    for blocks in range(11):
        for part in range(BLOCK):
            for _ in range(15):  # ties across blocks and values, and none
                pick = [1.0, 2.0, rng.uniform(0.0, 3.0)]
                state = Running(
                    blocks=tuple((rng.choice(pick), rng.choice([0.5, rng.random()]), i)
                                 for i in range(blocks)),
                    part=tuple(rng.choice(pick) for _ in range(part)))
                if blocks or part:
                    assert state.baseline(1) == _spelled_out(state), state


def test_too_few_values_give_no_baseline() -> None:
    state = Running(blocks=(), part=(1.0, 2.0, 3.0))
    assert state.baseline(4) is None and state.baseline(3) == _spelled_out(state)
    assert Running().baseline(0) is None
