"""Judge every (pair, test) of a host from its carried state and its new samples: pure.

Each key's state (`running.py`) goes on from its stored value with the sweep's new samples,
or is seeded from the history `load.py` read for it; then the same rule as ever
(`app/analysis/health.py:judge_test`) judges the kept samples of the look-back window against
the full-width expectation and the running baseline. The keys are those the history-reading
judgement had: every key with a sample in the window, and every pair and GPU of the fabric
for each test measured in it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from peerwatch.app.analysis.change_point import StepRule, step_down
from peerwatch.app.analysis.expected import ratio
from peerwatch.app.analysis.health import (
    BaselineRef,
    Sample,
    TestJudgement,
    Thresholds,
    judge_test,
)
from peerwatch.app.analysis.verdict import Verdict
from peerwatch.app.judging.expectations import Expectations, KeyExpectation
from peerwatch.app.judging.load import TestInputs
from peerwatch.app.judging.running import Running, advance, from_history
from peerwatch.app.records.fabric import HostFabric
from peerwatch.app.records.keys import PairKey
from peerwatch.app.runtime.config import Settings
from peerwatch.probes.report import TestName, test_scope


@dataclass(frozen=True)
class TestRules:
    th: Thresholds
    lookback_s: float  # the look-back window of a verdict, back from the newest sweep
    keep: int  # judged samples a state keeps: the k-of-n window (a longer low run goes on
    # from its stored low_since, as it did past the look-back window)
    min_samples: int  # a baseline needs this many healthy values
    max_samples: int  # ... and forgets over about this many
    floor_ratio: float  # a value below this of its expectation is a fault, not a normal
    baseline_window_s: float
    step: StepRule = StepRule()  # the change test on the ratio to the baseline


def rules_of(settings: Settings) -> TestRules:
    th = settings.thresholds
    return TestRules(th, max(settings.health_lookback_s, 2 * settings.degraded_sustain_s),
                     th.intermittent_of, settings.baseline_min_samples,
                     settings.baseline_max_samples, settings.degraded_ratio_expected,
                     settings.baseline_window_s)


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
    return lambda value: ratio(test, value, now) >= floor_ratio


def not_a_step(test: TestName, state: Running, rules: TestRules
               ) -> Callable[[float], bool]:
    """Is a value no step below the key's baseline (`change_point.py`)? One the change
    test counts (below 1 - k of it) is not learned: a step must not become its normal."""
    base = state.baseline(rules.min_samples)
    if base is None:
        return lambda value: True
    floor = 1.0 - rules.step.allowance
    return lambda value: ratio(test, value, base[0]) >= floor


def _both(a: Callable[[float], bool], b: Callable[[float], bool]) -> Callable[[float], bool]:
    return lambda value: a(value) and b(value)


def _states(inputs: TestInputs, expectations: Expectations, rules: TestRules
            ) -> dict[PairKey, Running]:
    states = dict(inputs.states)
    for key in inputs.seeded:
        states[key] = from_history(inputs.history.get(key, []), inputs.values.get(key, []),
                                   teaches(key[2], expectations.of(key), rules.floor_ratio),
                                   rules.keep, rules.max_samples, rules.baseline_window_s)
    for key, samples in inputs.new.items():
        state = states.get(key, Running())
        states[key] = advance(state, samples, _both(
            teaches(key[2], expectations.of(key), rules.floor_ratio),
            not_a_step(key[2], state, rules)),
            rules.keep, rules.max_samples, rules.baseline_window_s)
    return states


def with_step(j: TestJudgement, samples: list[Sample], base: tuple[float, float, int] | None,
              rule: StepRule, holding: bool) -> TestJudgement:
    """A healthy verdict made degraded where its newest judged values stepped down against
    its own baseline (`change_point.step_down`); any other verdict as it is."""
    if j.verdict is not Verdict.HEALTHY or base is None:
        return j
    if samples and samples[-1].contended and not holding:
        return j  # other traffic on the link now: the figures before it may be its too
    judged = [s for s in samples if s.judged]
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
    states = _states(inputs, expectations, rules)
    window = {k: samples for k, st in states.items() if (samples := st.samples(since))}
    tests = sorted({k[2] for k in window})  # StrEnum: by name
    per_gpu = {t for t in tests if test_scope(t) == "gpu"}
    keys = set(window) | {(s, d, t) for (s, d) in fabric.pairs for t in tests
                          if t not in per_gpu}
    keys |= {(g, g, t) for g in fabric.gpus for t in per_gpu}
    out, stored = {}, {}
    for key in sorted(keys):  # (src, dst, test name)
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
