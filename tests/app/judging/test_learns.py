"""Which healthy values teach a key's baseline (`pair_tests.learns`): the rule spelled out
value by value, both orientations, every case of its two lines (the expectation with the
links up now, the step below the stored baseline), NaN and non-positive values included;
and a state carried on by `advance` with `learn`'s short path inline is the one `learn`
builds, across a block filling."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest

from peerwatch.app.analysis.expected import oriented
from peerwatch.app.judging.expectations import KeyExpectation
from peerwatch.app.judging.key_rules import TestRules, rules_of
from peerwatch.app.judging.pair_tests import learns
from peerwatch.app.judging.running import BLOCK, Running, advance, learn, sample
from peerwatch.app.runtime.config import Settings
from peerwatch.probes.report import TestName, Unit, unit_of

RULES: TestRules = rules_of(Settings())
AT = datetime(2026, 12, 6, 8, 0, tzinfo=UTC)
VALUES = [-1.0, 0.0, 1.0, 50.0, 80.0, 93.0, 95.0, 96.9, 97.0, 100.0, 140.0, math.nan,
          math.inf]
TESTS = [TestName.CE_WRITE, TestName.LATENCY]  # a bandwidth and a time: both orientations


def _spelled_out(test: TestName, expect: KeyExpectation, centre: float | None,
                 value: float) -> bool:
    inverse = unit_of(test) is Unit.SECONDS
    if expect.narrowed:
        return False
    if expect.now is not None and not oriented(value, expect.now, inverse) >= RULES.floor_ratio:
        return False
    return centre is None or oriented(value, centre, inverse) >= 1.0 - RULES.step.allowance


def _state(n: int) -> Running:
    """A state of `n` healthy values of 100 (its baseline 100 once it has enough)."""
    return Running(part=(100.0,) * n)


@pytest.mark.parametrize("test", TESTS)
@pytest.mark.parametrize("expect", [KeyExpectation(None, True, 100.0),
                                    KeyExpectation(None, False, None),
                                    KeyExpectation(None, False, 100.0),
                                    KeyExpectation(None, False, 0.0)])
@pytest.mark.parametrize("n", [0, RULES.min_samples])
def test_a_value_teaches_exactly_as_the_rule_says(test: TestName, expect: KeyExpectation,
                                                  n: int) -> None:
    state = _state(n)
    base = state.baseline(RULES.min_samples)
    assert (base is None) == (n == 0)
    learned = learns(test, expect, state, RULES, base)
    for value in VALUES:
        assert learned(value) == _spelled_out(test, expect, base[0] if base else None,
                                              value), value


def test_advance_carries_a_state_as_learn_does_across_a_full_block() -> None:
    keep, most, window_s = RULES.keep, RULES.max_samples, RULES.baseline_window_s
    new = [sample(AT + timedelta(minutes=10 * i), 100.0 + i % 7) for i in range(3 * BLOCK)]
    carried, spelled = Running(), Running()
    for s in new:
        carried = advance(carried, [s], lambda v: True, keep, most, window_s)
        assert s.value is not None
        learnt = learn(spelled, s.value, s.at, most, window_s)
        spelled = Running(learnt.blocks, learnt.part, (*learnt.judged, s)[-keep:])
        assert carried == spelled
    assert len(carried.blocks) == 3 and not carried.part
