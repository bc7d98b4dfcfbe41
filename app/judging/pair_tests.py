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
from peerwatch.app.analysis.expected import oriented
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
from peerwatch.probes.report import TestName, Unit, test_scope, unit_of


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


def _states(inputs: TestInputs, expectations: Expectations, rules: TestRules
            ) -> dict[PairKey, Running]:
    states = dict(inputs.states)
    of, bases = expectations.of, inputs.bases
    keep, most, window_s = rules.keep, rules.max_samples, rules.baseline_window_s
    for key in inputs.seeded:
        states[key] = from_history(inputs.history.get(key, []), inputs.values.get(key, []),
                                   teaches(key[2], of(key), rules.floor_ratio),
                                   keep, most, window_s)
    empty = Running()
    for key, samples in inputs.new.items():
        state = states.get(key, empty)
        states[key] = advance(state, samples, learns(key[2], of(key), state, rules,
                                                     bases.get(key)), keep, most, window_s)
    return states


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
