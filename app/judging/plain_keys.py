"""A sweep's usual key judged in one pass over its numbers: its stored bytes read once and
written once, no sample object per kept value, no state tuple built per new value.

Nearly every (pair, test) of a steady host is such a key: its stored state holds judged
samples only (no contended sample kept, no failure), its new results are successes
measured without other traffic, and none of them fills a baseline block. Its verdict is
then healthy unless a value of its window is low or the change test's sum is above 0 (where
a low run before, `low_since`, could matter: the general way decides), and its new state is
the stored one with a value or two added.
`judge_plain` works that out from the packed state (`store/packed.py`: `plain`,
`pack_plain`) and the new values, and answers None for any other key and for a key it
finds low or drifting down: those go the general way (`pair_tests.py`: `Running`,
`judge_test`, `with_step`), whose verdict and stored state for a key taken here are the
same (tests/app/judging/test_plain_keys.py judges both ways on the same inputs).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from peerwatch.app.analysis.baseline import MAD_TO_SIGMA
from peerwatch.app.analysis.expected import oriented
from peerwatch.app.analysis.health import Sample, TestJudgement, judged_healthy
from peerwatch.app.judging.expectations import KeyExpectation
from peerwatch.app.judging.key_rules import TestRules
from peerwatch.app.judging.running import BLOCK, middle, sample_us, stored_sample
from peerwatch.app.records.keys import PairKey
from peerwatch.app.store import packed
from peerwatch.probes.report import Unit, unit_of


class Limits(NamedTuple):
    """The rule's figures a key is judged by, read off `TestRules` once a sweep."""

    kept: int  # judged samples kept, flat: 2 numbers each
    enough: int  # healthy values a baseline needs (at least 1)
    floor: float  # of the expectation with the links up now, to teach the baseline
    step_floor: float  # of the baseline, to teach it (no step below it is learned)
    low_expected: float  # below this of the expectation: low
    low_baseline: float  # below this of the baseline: low
    allowance: float  # the change test's drift not counted
    window_s: float  # the baseline's window (its words)


def limits_of(rules: TestRules) -> Limits:
    return Limits(2 * rules.keep, max(1, rules.min_samples), rules.floor_ratio,
                  1.0 - rules.step.allowance, rules.th.ratio_expected,
                  rules.th.ratio_baseline, rules.step.allowance, rules.baseline_window_s)


def _baseline(medians: list[float], mads: list[float], part: list[float], enough: int
              ) -> tuple[float, float, int] | None:
    """`Running.baseline` of blocks of these medians and MADs (sorted here, in place: their
    order is nobody's) and `part` (left in its order: it is stored so)."""
    n = BLOCK * len(medians) + len(part)
    if n < enough:
        return None
    centre = middle(medians, list(part))
    mad = middle(mads, [abs(v - centre) for v in part])
    return centre, MAD_TO_SIGMA * mad, n


def _learned(medians: list[float], mads: list[float], part: list[float],
             base: tuple[float, float, int] | None, new: Sequence[Sample],
             expect: KeyExpectation, limits: Limits, inverse: bool) -> list[float] | None:
    """The part-block after the new values `pair_tests.learns` lets in (its limits: the
    expectation with the links up now, no step below the stored baseline), `part` itself
    when none is; None when one would fill a block (the general way forms it)."""
    if expect.narrowed:
        return part
    n = BLOCK * len(medians) + len(part)
    enough = n >= limits.enough  # `Running.stored_baseline`: the stored one where it must
    if not (base is not None and enough and base[2] == n):  # be the same
        base = None if base is None and not enough else _baseline(medians, mads, part,
                                                                  limits.enough)
    now, centre = expect.now, None if base is None else base[0]
    floor, step_floor = limits.floor, limits.step_floor
    learned = part
    for s in new:
        v = s.value
        assert v is not None  # a success
        if now is not None and not (0.0 if v <= 0 or now <= 0 else now / v if inverse
                                    else v / now) >= floor:
            continue
        if centre is not None and not (0.0 if v <= 0 or centre <= 0 else centre / v
                                       if inverse else v / centre) >= step_floor:
            continue
        if len(learned) >= BLOCK - 1:
            return None
        learned = [*learned, v]
    return learned


def _healthy_window(values: list[float], e: float | None, b: float | None, inverse: bool,
                    limits: Limits) -> bool:
    """No value of the window low (`health._low_flags`), and the change test's newest sum
    at 0 (`change_point.step_down`; above it the general way decides whether it fires):
    one pass, each ratio worked out once, `expected.oriented` inline."""
    low_e, low_b, k = limits.low_expected, limits.low_baseline, limits.allowance
    steps, last = b is not None and b > 0, 0.0
    for v in values:
        if e is not None and (0.0 if v <= 0 or e <= 0 else e / v if inverse else v / e) < low_e:
            return False
        if b is None:
            continue
        rb = 0.0 if v <= 0 or b <= 0 else b / v if inverse else v / b
        if rb < low_b:
            return False
        if steps:  # max(0.0, ...) as the change test sums, NaN included
            last = last + (1.0 - rb) - k
            last = last if last > 0.0 else 0.0
    return last <= 0


def judge_plain(key: PairKey, data: bytes, new: Sequence[Sample], expect: KeyExpectation,
                limits: Limits, since_us: int) -> tuple[TestJudgement, bytes] | None:
    """(the key's verdict, its state as stored) where it is a usual key judged healthy;
    None otherwise. `data`: its stored state; `new`: its results since (oldest first, all
    newer than the state); `since_us`: the look-back window's start."""
    for s in new:
        if s.error is not None or s.contended:
            return None
    found = packed.plain(data)
    if found is None:
        return None
    blocks, medians, mads, part, judged, base = found
    src, dst, test = key
    unit = unit_of(test)
    inverse = unit is Unit.SECONDS
    learned = _learned(medians, mads, part, base, new, expect, limits, inverse)
    if learned is None:
        return None
    if new:
        for s in new:
            judged += (sample_us(s), s.value)  # `plain` gave a list of its own
        del judged[:-limits.kept]
    first = 0  # the window: the judged samples at or after its start
    while first < len(judged) and judged[first] < since_us:
        first += 2
    values = judged[first + 1::2]
    if not values:
        return None
    # `Running.baseline`: the stored one where it must be the same
    if not (learned is part and base is not None
            and base[2] == BLOCK * len(medians) + len(part) >= limits.enough):
        base = _baseline(medians, mads, learned, limits.enough)
    full = expect.full
    e, b = None if full is None else full.value, None if base is None else base[0]
    if not _healthy_window(values, e, b, inverse, limits):
        return None
    value = values[-1]
    verdict = judged_healthy(
        src, dst, test, unit, new[-1] if new else stored_sample(judged[-2], value), full, b,
        limits.window_s, None if e is None else oriented(value, e, inverse),
        None if b is None else oriented(value, b, inverse))
    return verdict, packed.pack_plain(len(medians), blocks, learned, judged, base)
