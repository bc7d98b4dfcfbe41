"""A step down in a pair's (or a GPU's) own figures, found by a one-sided CUSUM on the
ratio of each judged value to the key's baseline. Pure.

Why: the fixed lines (0.80 of the baseline, 0.70 of the expectation) let a GPU whose every
pair runs 15 % slow read `healthy` until its 7-day baseline absorbs the drop, and a 20 %
step flaps on the 0.80 line. A failing cable, a downtrained link or a bad riser is a *step*:
small, lasting, sudden. The lower CUSUM accumulates how far each value falls below the
baseline beyond an allowance `k` and fires when the sum reaches `h`:

    S_0 = 0,  S_i = max(0, S_{i-1} + (1 - r_i) - k),  r_i = value_i / baseline

With k = 0.03 and h = 0.15 a 10 % step adds 0.07 a sweep and fires on its third sweep, a
15 % step on its second; noise of the simulator's size (0.4 % bandwidth, 1.2 % latency per
sample) never reaches h (it would take a run of values each ~5 % low). It also needs its
newest two values both clearly low (below 1 - 2k): a step lasts, so one odd sample, however
low, and a fault that comes and goes (low in every other sweep) are the k-of-n rule's
business, never a step; values a throttle slowed (explained while it lasted,
`throttle.py`) fire nothing once the GPU runs free again; nor does a key whose newest sample
was contended (`judging/pair_tests.py`: other traffic on the link may have slowed the
values before it too, unseen).

Hysteresis: a key already low holds while the sum stays above h / 2 and its newest two
values stay below 1 - k (a looser line than the one that fired it), so a step that sits on
its line does not fire, resolve and fire again; one good sweep clears it. A value the sum
counts (below 1 - k of the baseline) is not learned by the baseline
(`judging/pair_tests.py`), so a step never becomes the key's normal: it stays found until
the figures come back. A lasting shift of 3-6 % is neither paged nor learned: the baseline
keeps the old normal (a re-judgement from history, `reseed`, starts it afresh).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from peerwatch.probes.report import TestName, Unit, unit_of


@dataclass(frozen=True)
class StepRule:
    allowance: float = 0.03  # k: drift below the baseline not counted
    alarm: float = 0.15  # h: the sum that fires
    min_low: int = 2  # clearly low values needed since the sum last stood at 0

    @property
    def clearly_low(self) -> float:
        """A ratio below this is clearly low (and not learned by the baseline)."""
        return 1.0 - 2 * self.allowance


@dataclass(frozen=True)
class StepDown:
    score: float  # the CUSUM now
    since: int  # index of the first value of the run that fired
    ratio: float  # median ratio of the run's values to the baseline

    def text(self, rule: StepRule) -> str:
        return (f"stepped down to {self.ratio:.2f} of its own baseline (change test: CUSUM "
                f"{self.score:.2f} >= {rule.alarm:g})")


def lower_cusum(ratios: Sequence[float], allowance: float) -> list[float]:
    """S_i of each ratio (1.0 = the baseline; lower is worse)."""
    out, s = [], 0.0
    for r in ratios:
        s = max(0.0, s + (1.0 - r) - allowance)
        out.append(s)
    return out


def step_down(test: TestName, values: Sequence[float], baseline: float | None,
              rule: StepRule, holding: bool = False) -> StepDown | None:
    """The step the newest `values` (oldest first, judged: uncontended successes) show
    against `baseline`, or None; `holding`: the key was low when last judged (hysteresis)."""
    if baseline is None or baseline <= 0 or not values:
        return None
    inverse = unit_of(test) is Unit.SECONDS  # `expected.ratio`, its orientation looked up
    ratios = [0.0 if v <= 0 else baseline / v if inverse else v / baseline  # once (~416
              for v in values]  # keys a sweep, each with its k-of-n window of values)
    last, k = 0.0, rule.allowance  # `lower_cusum`'s newest sum first, inline: most keys
    for r in ratios:  # end at 0 (no step), and need no more
        last = max(0.0, last + (1.0 - r) - k)
    if last <= 0:
        return None
    sums = lower_cusum(ratios, k)
    start = max((i + 1 for i, s in enumerate(sums) if s == 0.0), default=0)
    run = ratios[start:]
    newest = ratios[-rule.min_low:]  # a step is lasting: its newest values all clearly low
    fires = sums[-1] >= rule.alarm and len(newest) == rule.min_low \
        and all(r < rule.clearly_low for r in newest)
    holds = holding and sums[-1] >= rule.alarm / 2 and len(newest) == rule.min_low \
        and all(r < 1.0 - rule.allowance for r in newest)  # still below its line, looser
    if not (fires or holds):
        return None
    return StepDown(sums[-1], start, sorted(run)[len(run) // 2])
