"""Judge every (pair, test) of a host from its carried state and its new samples: pure.

Each key's state (`running.py`) goes on from its stored value with the sweep's new samples,
or is seeded from the history `load.py` read for it; then the same rule as ever
(`app/analysis/health.py:judge_test`) judges the kept samples of the look-back window against
the full-width expectation and the running baseline. The keys are those the history-reading
judgement had: every key with a sample in the window, and every pair and GPU of the fabric
for each test measured in it. The usual key (judged samples only, plain successes, healthy)
is judged from its packed numbers by `plain_keys.py`; every other key goes the general way
here, with the same rule.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta

from peerwatch.app.analysis.change_point import StepRule, step_down
from peerwatch.app.analysis.expected import oriented
from peerwatch.app.analysis.health import (
    BaselineRef,
    Sample,
    TestJudgement,
    judge_test,
)
from peerwatch.app.analysis.verdict import Verdict
from peerwatch.app.judging.expectations import Expectations, KeyExpectation
from peerwatch.app.judging.key_rules import TestRules
from peerwatch.app.judging.load import TestInputs
from peerwatch.app.judging.plain_keys import judge_plain, limits_of
from peerwatch.app.judging.running import Running, advance, epoch_us, from_history
from peerwatch.app.records.fabric import HostFabric
from peerwatch.app.records.keys import PairKey
from peerwatch.probes.report import TestName, Unit, test_scope, unit_of


def teaches(test: TestName, expect: KeyExpectation, floor_ratio: float
            ) -> Callable[[float], bool]:
    """May a healthy value of the key move its baseline? Not while the pair runs with
    NVLinks lost (the lower figures would become its normal and hide the loss), nor a value
    so far below the expectation that it is a fault."""
    if expect.narrowed:
        return lambda value: False
    now = expect.now
    if now is None:
        return lambda value: True
    inverse = unit_of(test) is Unit.SECONDS  # `ratio`'s orientation, looked up once
    return lambda value: oriented(value, now, inverse) >= floor_ratio


def _never(value: float) -> bool:
    return False


def _always(value: float) -> bool:
    return True


def learns(test: TestName, expect: KeyExpectation, state: Running, rules: TestRules,
           stored: tuple[float, float, int] | None = None) -> Callable[[float], bool]:
    """May a new healthy value of the key move its baseline? As `teaches`, and only where
    it is no step below the key's baseline (`change_point.py`): one the change test counts
    (below 1 - k of it) is not learned, a step must not become its normal (`stored`: the
    baseline stored with `state`, if any, `Running.stored_baseline`). Both lines worked out
    once per key, `oriented` inline: a sweep asks this of each of ~416 keys, where three
    closures a key were a visible share of carrying the states on."""
    if expect.narrowed:
        return _never
    now = expect.now
    base = state.stored_baseline(stored, rules.min_samples)
    if now is None and base is None:
        return _always
    inverse = unit_of(test) is Unit.SECONDS
    floor_ratio, step_floor = rules.floor_ratio, 1.0 - rules.step.allowance
    centre = None if base is None else base[0]

    def learned(v: float) -> bool:  # `oriented` inline, as `_low_flags` does
        if now is not None and not ((0.0 if v <= 0 or now <= 0 else now / v if inverse
                                     else v / now) >= floor_ratio):
            return False
        return centre is None or (0.0 if v <= 0 or centre <= 0 else centre / v if inverse
                                  else v / centre) >= step_floor
    return learned


def _carried(key: PairKey, inputs: TestInputs, expect: KeyExpectation, rules: TestRules
             ) -> Running:
    """The key's state after the sweep's new samples, the general way: seeded from its
    history, or its stored state unpacked and carried on."""
    keep, most, window_s = rules.keep, rules.max_samples, rules.baseline_window_s
    if key in inputs.seeded:
        return from_history(inputs.history.get(key, []), inputs.values.get(key, []),
                            teaches(key[2], expect, rules.floor_ratio), keep, most, window_s)
    data = inputs.states.get(key)
    state, stored = (Running(), None) if data is None else Running.unpack_with_base(data)
    new = inputs.new.get(key)
    if not new:
        return state
    return advance(state, new, learns(key[2], expect, state, rules, stored), keep, most,
                   window_s)


def with_step(j: TestJudgement, samples: list[Sample], base: tuple[float, float, int] | None,
              rule: StepRule, holding: bool) -> TestJudgement:
    """A healthy verdict made degraded where its newest judged values stepped down against
    its own baseline (`change_point.step_down`); any other verdict as it is."""
    if j.verdict is not Verdict.HEALTHY or base is None:
        return j
    if samples and samples[-1].contended and not holding:
        return j  # other traffic on the link now: the figures before it may be its too
    judged = [s for s in samples  # `Sample.judged`, inline
              if s.error is None and s.value is not None and not s.contended]
    found = step_down(j.test, [s.value for s in judged if s.value is not None], base[0],
                      rule, holding)
    if found is None:
        return j
    began = judged[found.since].at
    if holding and j.low_since is not None:
        began = min(began, j.low_since)
    return replace(j, verdict=Verdict.DEGRADED, low_since=began,
                   reason=f"{j.reason.split('; low for')[0]}; {found.text(rule)}")


def judge_tests(inputs: TestInputs, fabric: HostFabric, expectations: Expectations,
                rules: TestRules, newest: datetime
                ) -> tuple[dict[PairKey, TestJudgement], dict[PairKey, bytes]]:
    """(every (pair, test) verdict, the state each goes on from, as stored); `newest`: the
    host's newest sweep, where the look-back window ends; `expectations`: the fabric's
    figures for each key (`expectations.py`)."""
    since = newest - timedelta(seconds=rules.lookback_s)
    since_us, of, seeded, limits = epoch_us(since), expectations.of, inputs.seeded, limits_of(
        rules)
    plain, states, window = {}, {}, {}
    for key in {*inputs.states, *inputs.new, *seeded}:
        data = inputs.states.get(key)
        if data is not None and key not in seeded and (found := judge_plain(
                key, data, inputs.new.get(key, ()), of(key), limits, since_us)) is not None:
            plain[key] = found  # the usual key, in one pass over its numbers
            continue
        state = states[key] = _carried(key, inputs, of(key), rules)
        if samples := state.samples(since):
            window[key] = samples
    tests = sorted({k[2] for k in window} | {k[2] for k in plain})  # StrEnum: by name
    per_gpu = {t for t in tests if test_scope(t) == "gpu"}
    keys = set(window) | set(plain) | {(s, d, t) for (s, d) in fabric.pairs for t in tests
                                       if t not in per_gpu}
    keys |= {(g, g, t) for g in fabric.gpus for t in per_gpu}
    out, stored = {}, {}
    for key in sorted(keys):  # (src, dst, test name)
        if (found := plain.get(key)) is not None:
            out[key], stored[key] = found
            continue
        s, d, t = key
        state = states.get(key, Running())
        base = state.baseline(rules.min_samples)
        before = inputs.low_before.get(key)
        out[key] = with_step(
            judge_test(s, d, t, window.get(key, []), expectations.of(key).full,
                       BaselineRef(base[0], rules.baseline_window_s) if base else None,
                       rules.th, before), window.get(key, []), base, rules.step,
            before is not None)
        stored[key] = state.pack(base)
    return out, stored
