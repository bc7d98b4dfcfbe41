"""The settings a (pair, test) is judged by, gathered once per judgement: what
`pair_tests.py` (the general way) and `plain_keys.py` (the usual key's short way) both read.
"""

from __future__ import annotations

from dataclasses import dataclass

from peerwatch.app.analysis.change_point import StepRule
from peerwatch.app.analysis.health import Thresholds
from peerwatch.app.runtime.config import Settings


@dataclass(frozen=True)
class TestRules:
    __test__ = False  # not a pytest class

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
