"""A sweep's usual key judged in one pass over its numbers: its stored bytes read once and
written once, no sample object per kept value, no state tuple built per new value.

Nearly every (pair, test) of a steady host is such a key: its stored state holds judged
samples only (no contended sample kept, no failure), its new results are successes
measured without other traffic, none of them fills a baseline block, and it was not low
when last judged. Its verdict is then healthy unless a value of its window is low or the
change test counts a drop, and its new state is the stored one with a value or two added.
`judge_plain` works that out from the packed state (`store/packed.py`: `plain`,
`pack_plain`) and the new values, and answers None for any other key and for a key it
finds low or drifting down: those go the general way (`pair_tests.py`: `Running`,
`judge_test`, `with_step`), whose verdict and stored state for a key taken here are the
same (tests/app/judging/test_plain_keys.py judges both ways on the same inputs).
"""

from __future__ import annotations

from collections.abc import Sequence

from peerwatch.app.analysis.baseline import MAD_TO_SIGMA
from peerwatch.app.analysis.health import BaselineRef, Sample, TestJudgement, judged_healthy
from peerwatch.app.judging.expectations import KeyExpectation
from peerwatch.app.judging.key_rules import TestRules
from peerwatch.app.judging.running import BLOCK, middle, sample_us, stored_sample
from peerwatch.app.records.keys import PairKey
from peerwatch.app.store import packed
from peerwatch.probes.report import Unit, unit_of


def _ratio(v: float, to: float, inverse: bool) -> float:
    """`expected.oriented`: the value against `to`, lower always worse."""
    return 0.0 if v <= 0 or to <= 0 else to / v if inverse else v / to


def _learned(state: packed.Plain, new: Sequence[Sample], expect: KeyExpectation,
             rules: TestRules, inverse: bool) -> list[float] | None:
    """The part-block after the new values `pair_tests.learns` lets in (its limits: the
    expectation with the links up now, no step below the stored baseline), or None when
    one would fill a block (the general way forms it)."""
    if expect.narrowed:
        return state.part
    n = BLOCK * len(state.medians) + len(state.part)
    enough = n >= max(1, rules.min_samples)
    base = state.base  # `Running.stored_baseline`: the stored one where it must be the same
    if not (base is not None and enough and base[2] == n):
        base = None if base is None and not enough else _baseline(state, state.part, rules)
    now, centre = expect.now, None if base is None else base[0]
    floor, step_floor = rules.floor_ratio, 1.0 - rules.step.allowance
    part = state.part
    for s in new:
        v = s.value
        assert v is not None  # a success
        if now is not None and not _ratio(v, now, inverse) >= floor:
            continue
        if centre is not None and not _ratio(v, centre, inverse) >= step_floor:
            continue
        if len(part) >= BLOCK - 1:
            return None
        part = [*part, v]
    return part


def _baseline(state: packed.Plain, part: list[float], rules: TestRules
              ) -> tuple[float, float, int] | None:
    """`Running.baseline` of the state's blocks and `part`."""
    n = BLOCK * len(state.medians) + len(part)
    if n < max(1, rules.min_samples):
        return None
    centre = middle(list(state.medians), list(part))
    mad = middle(list(state.mads), [abs(v - centre) for v in part])
    return centre, MAD_TO_SIGMA * mad, n


def _drifts(values: list[float], centre: float, inverse: bool, allowance: float) -> bool:
    """The change test's newest sum above 0 (`change_point.step_down`): let the general
    way decide whether it fires."""
    last = 0.0
    for v in values:
        last = max(0.0, last + (1.0 - _ratio(v, centre, inverse)) - allowance)
    return last > 0


def judge_plain(key: PairKey, data: bytes, new: Sequence[Sample], expect: KeyExpectation,
                rules: TestRules, since_us: int) -> tuple[TestJudgement, bytes] | None:
    """(the key's verdict, its state as stored) where it is a usual key judged healthy;
    None otherwise. `data`: its stored state; `new`: its results since (oldest first, all
    newer than the state); `since_us`: the look-back window's start."""
    if any(s.error is not None or s.contended for s in new):
        return None
    state = packed.plain(data)
    if state is None:
        return None
    src, dst, test = key
    inverse = unit_of(test) is Unit.SECONDS
    part = _learned(state, new, expect, rules, inverse)
    if part is None:
        return None
    judged = state.judged
    if new:
        judged = [*judged]
        for s in new:
            judged += (sample_us(s), s.value)
        judged = judged[-2 * rules.keep:]
    first = 0  # the window: the judged samples at or after its start
    while first < len(judged) and judged[first] < since_us:
        first += 2
    values = judged[first + 1::2]
    if not values:
        return None
    base = state.base  # `Running.baseline`: the stored one where it must be the same
    if not (part is state.part and base is not None and base[2] == BLOCK * len(
            state.medians) + len(part) >= max(1, rules.min_samples)):
        base = _baseline(state, part, rules)
    full = expect.full
    e, b = None if full is None else full.value, None if base is None else base[0]
    th = rules.th
    for v in values:  # `health._low_flags`
        if (e is not None and _ratio(v, e, inverse) < th.ratio_expected) or (
                b is not None and _ratio(v, b, inverse) < th.ratio_baseline):
            return None
    if b is not None and b > 0 and _drifts(values, b, inverse, rules.step.allowance):
        return None
    newest = new[-1] if new else stored_sample(judged[-2], judged[-1])
    value = values[-1]
    verdict = judged_healthy(
        src, dst, test, newest, full,
        None if base is None else BaselineRef(base[0], rules.baseline_window_s),
        None if e is None else _ratio(value, e, inverse),
        None if b is None else _ratio(value, b, inverse))
    return verdict, packed.pack_plain(len(state.medians), state.blocks, part, judged, base)
