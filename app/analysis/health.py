"""Verdicts for pairs: is this (pair, test) as fast as it should be, and has it been slow
long enough to call it degraded?

Pure functions over plain values (samples, the expectation, the baseline, thresholds), so the
API, the alert rules and the placement all judge the same way and tests need no database.

The rule, per (pair, test):
- only successful, uncontended samples are judged. Contended samples are kept and shown but
  never make a pair degraded: someone else's job was on the link;
- a sample is *low* when measured/expected < `ratio_expected` or measured/baseline <
  `ratio_baseline` (latency: the inverse ratios, so lower is always worse);
- the pair is **degraded** when the newest judged samples are all low and that run of low
  samples spans at least `sustain_s` — in time, or in measurements at the key's own cadence
  (a sustain of one sweep interval is two low sweeps in a row, whatever the jitter), or
  when `intermittent_low` of the newest `intermittent_of` judged samples are low (slow in
  every other sweep); a shorter run is still healthy, with the reason saying it is being
  watched. Once degraded, a pair is healthy again after `intermittent_low` good samples in a
  row: hysteresis, so a fault that comes and goes pages once and stays paged;
- the newest attempt failing is **down** when the one before it failed too (or there is
  none), **degraded** after an isolated failure;
- no judged sample at all is **unknown**.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import MISSING, dataclass, fields
from datetime import datetime
from typing import Any

from peerwatch.app.analysis.expected import Expectation, oriented, ratio
from peerwatch.app.analysis.text import fmt_duration, fmt_value, fmt_window
from peerwatch.app.analysis.verdict import SEVERITY, Verdict
from peerwatch.probes.report import P2PCap, P2PStatus, PairInfo, TestName, Unit, unit_of


@dataclass(frozen=True)
class Thresholds:
    ratio_expected: float = 0.7
    ratio_baseline: float = 0.8
    sustain_s: float = 600.0
    error_rate_per_s: float = 0.0  # NVLink replay/recovery growth tolerated
    crc_rate_per_s: float = 1.0  # NVLink CRC/ECC growth tolerated
    intermittent_low: int = 3  # degraded when this many ...
    intermittent_of: int = 6  # ... of the newest judged samples are low


@dataclass(frozen=True)
class Sample:
    at: datetime
    value: float | None
    contended: bool = False
    error: str | None = None
    foreign_bytes: int = 0

    @property
    def judged(self) -> bool:
        return self.error is None and self.value is not None and not self.contended


@dataclass(frozen=True)
class BaselineRef:
    value: float
    window_s: float


@dataclass(frozen=True)
class Judgement:
    verdict: Verdict
    reason: str


@dataclass(frozen=True)
class TestJudgement(Judgement):
    __test__ = False  # not a pytest class

    src: int
    dst: int
    test: TestName
    latest: Sample | None = None  # newest sample of any kind
    value: float | None = None  # newest judged value
    value_at: datetime | None = None  # when it was measured
    ratio_expected: float | None = None
    ratio_baseline: float | None = None
    low_since: datetime | None = None
    expected: float | None = None  # what it was judged against, stored with the verdict
    expected_basis: str | None = None
    baseline: float | None = None


# every field of a TestJudgement at its default (None for those without one)
_TEST_FIELDS: dict[str, Any] = {f.name: None if f.default is MISSING else f.default
                                for f in fields(TestJudgement)}
_new = object.__new__


def _test_judgement(values: dict[str, Any]) -> TestJudgement:
    """A `TestJudgement` of `values` (every field, as `_TEST_FIELDS` names them), compared,
    hashed and replaced as one built by `__init__`, built without the frozen dataclass's
    `__init__` (16 `object.__setattr__` calls, ~4 us; ~416 are built every sweep)."""
    t = _new(TestJudgement)
    t.__dict__.update(values)
    return t


@dataclass(frozen=True)
class PairJudgement(Judgement):
    src: int
    dst: int
    tests: tuple[TestJudgement, ...]
    # set by `attribution.py`: the GPU whose fault explains this pair's state (the pair
    # blames only it), and why the pair cannot be trusted, in words ("GPU6 fabric in
    # progress", "P2P unavailable"); neither set: the pair speaks for itself
    explained_by: int | None = None
    cause: str | None = None
    by_event: bool = False  # explained by an Xid of `explained_by` (xid_attribution.py)


def worst(verdicts: Iterable[Verdict]) -> Verdict:
    return max(verdicts, key=SEVERITY.__getitem__, default=Verdict.UNKNOWN)


def pair_label(src: int, dst: int, test: TestName) -> str:
    """ "GPU3->GPU5 ce_write"; a per-GPU test, stored as src == dst, is "GPU3 h2d"."""
    if src == dst:
        return f"GPU{src} {test._value_}"  # `value` is a Python property: ~5x the time
    return f"GPU{src}->GPU{dst} {test._value_}"


def _ratios(test: TestName, value: float, expect: Expectation | None,
            baseline: BaselineRef | None) -> tuple[float | None, float | None]:
    r_e = ratio(test, value, expect.value) if expect else None
    r_b = ratio(test, value, baseline.value) if baseline else None
    return r_e, r_b


def is_low(test: TestName, value: float, expect: Expectation | None,
           baseline: BaselineRef | None, th: Thresholds) -> bool:
    r_e, r_b = _ratios(test, value, expect, baseline)
    return (r_e is not None and r_e < th.ratio_expected) or (
        r_b is not None and r_b < th.ratio_baseline)


def describe(src: int, dst: int, test: TestName, value: float, expect: Expectation | None,
             baseline: BaselineRef | None) -> str:
    """ "GPU3->GPU5 ce_write 212 GB/s is 0.54 of expected 397 GB/s (NV18 ...) and 0.55 of
    its 7-day baseline" — the sentence every pair verdict starts with."""
    return _describe(pair_label(src, dst, test), test, value, expect,
                     baseline.window_s if baseline else None,
                     *_ratios(test, value, expect, baseline))


def _describe(label: str, test: TestName, value: float, expect: Expectation | None,
              window_s: float | None, r_e: float | None, r_b: float | None,
              unit: Unit | None = None) -> str:
    """`describe` from the label and ratios its caller has worked out already (`window_s`:
    the baseline's window, None without a baseline; `unit`: the test's, when known). The
    words of the expectation and the baseline window, the same for every sweep of a key,
    are worked out once (`_words`)."""
    unit = unit_of(test) if unit is None else unit
    parts = []
    if expect is not None and r_e is not None:
        parts.append(f"{r_e:.2f} of expected {_words(expect.value, unit, expect.basis)}")
    if window_s is not None and r_b is not None:
        parts.append(f"{r_b:.2f} of its {_window_words(window_s)} baseline")
    head = f"{label} {fmt_value(value, unit)}"
    return f"{head} is {' and '.join(parts)}" if parts else f"{head} (no expectation yet)"


_WORDS: dict[tuple[float, Unit, str], str] = {}
_WINDOW_WORDS: dict[float, str] = {}
WORDS_KEPT = 100_000  # a bound, not an eviction policy: refilled by one sweep of each key


def _words(value: float, unit: Unit, basis: str) -> str:
    """ "397 GB/s (NV18 ...)": an expectation's words, kept by its figures."""
    key = (value, unit, basis)
    found = _WORDS.get(key)
    if found is None:
        if len(_WORDS) >= WORDS_KEPT:
            _WORDS.clear()
        found = _WORDS[key] = f"{fmt_value(value, unit)} ({basis})"
    return found


def _window_words(seconds: float) -> str:
    found = _WINDOW_WORDS.get(seconds)
    if found is None:
        found = _WINDOW_WORDS[seconds] = fmt_window(seconds)
    return found


def _failure(src: int, dst: int, test: TestName, samples: Sequence[Sample]) -> Judgement:
    latest = samples[-1]
    earlier = [s for s in samples[:-1] if s.error is not None or s.value is not None]
    repeated = not earlier or earlier[-1].error is not None
    verdict = Verdict.DOWN if repeated else Verdict.DEGRADED
    how = "failed again" if repeated and earlier else "failed" if repeated else "failed once"
    return Judgement(verdict, f"{pair_label(src, dst, test)} {how}: {latest.error}")


def _started(src: int, dst: int, test: TestName, latest: Sample | None,
             expect: Expectation | None, baseline: float | None) -> TestJudgement:
    """A verdict's fields known before it is made (as `_test_judgement`, set in place)."""
    made = _new(TestJudgement)
    common = made.__dict__
    common.update(_TEST_FIELDS)
    common["src"], common["dst"], common["test"] = src, dst, test
    common["latest"] = latest
    if expect is not None:
        common["expected"], common["expected_basis"] = expect.value, expect.basis
    common["baseline"] = baseline
    return made


def judged_healthy(src: int, dst: int, test: TestName, unit: Unit, newest: Sample,
                   expect: Expectation | None, baseline: float | None, window_s: float,
                   r_e: float | None, r_b: float | None) -> TestJudgement:
    """`judge_test`'s verdict for a window whose newest sample, `newest`, is judged and
    none of whose judged values is low (the caller has found so, with the ratios `r_e` and
    `r_b` of its value to `expect` and to `baseline`, of `window_s`): healthy, its words
    the same sentence. For the usual key of a sweep (`judging/plain_keys.py`), judged from
    its numbers without the window's samples."""
    made = _started(src, dst, test, newest, expect, baseline)
    common = made.__dict__
    value = newest.value
    assert value is not None
    common["verdict"] = Verdict.HEALTHY
    common["reason"] = _describe(pair_label(src, dst, test), test, value, expect,
                                 None if baseline is None else window_s, r_e, r_b, unit)
    common["value"], common["value_at"] = value, newest.at
    common["ratio_expected"], common["ratio_baseline"] = r_e, r_b
    return made


def judge_test(src: int, dst: int, test: TestName, samples: Sequence[Sample],
               expect: Expectation | None, baseline: BaselineRef | None,
               th: Thresholds, low_since_before: datetime | None = None) -> TestJudgement:
    """Judge one (pair, test) from its recent samples (oldest first).

    `low_since_before`: when the low run began as last judged. The samples cover a
    look-back window only, so a run as old as the window started earlier than they show.

    On the hot path of every sweep (~416 keys on an 8-GPU host): each judged sample's low
    flag is worked out once, and the verdict built once."""
    label = pair_label(src, dst, test)
    made = _started(src, dst, test, samples[-1] if samples else None, expect,
                    None if baseline is None else baseline.value)
    common = made.__dict__

    def verdict(v: Verdict, reason: str, **judged: Any) -> TestJudgement:
        common["verdict"], common["reason"] = v, reason
        if judged:
            common.update(judged)
        return made

    if not samples:
        return verdict(Verdict.UNKNOWN, f"{label} not measured yet")
    if samples[-1].error is not None:
        j = _failure(src, dst, test, samples)
        return verdict(j.verdict, j.reason)
    judged = [s for s in samples  # `Sample.judged`, inline (~2,500 samples a sweep)
              if s.error is None and s.value is not None and not s.contended]
    if not judged:
        n = sum(1 for s in samples if s.contended)
        return verdict(Verdict.UNKNOWN, f"{label}: only contended samples recently ({n}); "
                                        "other traffic was on the link")
    newest = judged[-1]
    assert newest.value is not None
    unit = unit_of(test)
    inverse = unit is Unit.SECONDS  # `ratio`'s orientation, looked up once
    value = newest.value
    r_e = None if expect is None else oriented(value, expect.value, inverse)
    r_b = None if baseline is None else oriented(value, baseline.value, inverse)
    figures = {"value": value, "value_at": newest.at, "ratio_expected": r_e,
               "ratio_baseline": r_b}
    text = _describe(label, test, value, expect, baseline.window_s if baseline else None,
                     r_e, r_b, unit)
    if samples[-1].contended:
        text += (f" (newest sample contended by {samples[-1].foreign_bytes / 1e9:.1f} GB "
                 "of other traffic, not judged)")
    low = _low_flags(test, judged, expect, baseline, th, inverse)
    if True not in low:  # no low sample: no run, nothing intermittent (the usual key)
        return verdict(Verdict.HEALTHY, text, **figures)
    run_from = len(judged)  # the newest consecutive low samples: judged[run_from:]
    while run_from and low[run_from - 1]:
        run_from -= 1
    run = judged[run_from:]
    began = run[0].at if run else None
    if run and run_from == 0 and low_since_before is not None:
        began = min(began or low_since_before, low_since_before)
    lasted = (newest.at - began).total_seconds() if began else 0.0
    if run and (lasted >= th.sustain_s or _sustained_in_samples(run, judged, th)):
        return verdict(Verdict.DEGRADED, f"{text}, for {fmt_duration(lasted)}",
                       low_since=began, **figures)
    recent = judged[-th.intermittent_of:]
    lows = [s for s, is_low_ in zip(recent, low[len(judged) - len(recent):], strict=True)
            if is_low_]
    recovered = len(judged) >= th.intermittent_low and all(
        s not in lows for s in judged[-th.intermittent_low:])
    if len(lows) >= th.intermittent_low and not recovered:
        how = (f"low in all of the last {len(recent)} measurements"
               if len(lows) == len(recent) else
               f"low in {len(lows)} of the last {len(recent)} measurements (intermittent)")
        return verdict(Verdict.DEGRADED, f"{text}; {how}", low_since=lows[0].at, **figures)
    if not run:
        return verdict(Verdict.HEALTHY, text, **figures)
    return verdict(Verdict.HEALTHY,
                   f"{text}; low for {fmt_duration(lasted)}, degraded after "
                   f"{fmt_duration(th.sustain_s)}", low_since=began, **figures)


def _low_flags(test: TestName, judged: Sequence[Sample], expect: Expectation | None,
               baseline: BaselineRef | None, th: Thresholds,
               inverse: bool | None = None) -> list[bool]:
    """Whether each judged sample is low, as `is_low`, with the two limits worked out once:
    measured/expected < ratio_expected or measured/baseline < ratio_baseline."""
    e = expect.value if expect else None
    b = baseline.value if baseline else None
    if inverse is None:  # `ratio`'s orientation, looked up once
        inverse = unit_of(test) is Unit.SECONDS
    r_e, r_b = th.ratio_expected, th.ratio_baseline
    flags = []
    for s in judged:  # `oriented` inline (~2,500 samples a sweep): the same divisions
        v = s.value
        assert v is not None
        flags.append((e is not None and (0.0 if v <= 0 or e <= 0 else e / v if inverse
                                         else v / e) < r_e)
                     or (b is not None and (0.0 if v <= 0 or b <= 0 else b / v if inverse
                                            else v / b) < r_b))
    return flags


def _sustained_in_samples(run: Sequence[Sample], judged: Sequence[Sample],
                          th: Thresholds) -> bool:
    """The sustain counted in measurements where a measurement is the unit: a run of low
    samples holds `sustain_s` once it spans round(sustain_s / cadence) gaps, the cadence
    being the median gap between this key's judged samples. A sustain equal to the sweep
    interval is then "low in 2 sweeps in a row" whatever the agent's jitter, where the time
    alone (600 s between sweeps 570 or 630 s apart) made detection the 2nd or the 3rd sweep."""
    gaps = sorted((b.at - a.at).total_seconds() for a, b in zip(judged, judged[1:],
                                                                 strict=False))
    if not gaps or th.sustain_s <= 0:
        return False
    cadence = gaps[len(gaps) // 2]
    return cadence > 0 and len(run) - 1 >= max(1, round(th.sustain_s / cadence))


def p2p_problem(pair: PairInfo | None) -> str | None:
    """Why a pair that has NVLink cannot use peer-to-peer, or None when it can."""
    if pair is None or not pair.nvlink_width:
        return None
    if pair.can_access_peer is False:
        return (f"GPU{pair.src}->GPU{pair.dst} has {pair.topology} but P2P is unavailable "
                "(cudaDeviceCanAccessPeer false): copies are staged through host memory")
    bad = {cap.value: st.value for cap, st in pair.p2p.items()
           if cap in (P2PCap.READ, P2PCap.WRITE) and st is not P2PStatus.OK}
    if bad:
        what = ", ".join(f"{k} {v}" for k, v in sorted(bad.items()))
        return f"GPU{pair.src}->GPU{pair.dst} has {pair.topology} but P2P {what}"
    return None


# Words a test's reason carries when a throttled GPU confounded it (`throttle.py`): the
# pair is unknown, not healthy, while any of its tests reads so.
CONFOUNDED = "not judged as a fabric fault"


def judge_pair(src: int, dst: int, tests: Sequence[TestJudgement],
               pair: PairInfo | None) -> PairJudgement:
    """The pair's verdict: its worst judged test, or P2P lost on an NVLink pair."""
    ordered = tuple(sorted(tests, key=lambda t: t.test))  # a StrEnum: by its value
    judged = [t for t in ordered if t.verdict is not Verdict.UNKNOWN]
    problem = p2p_problem(pair)
    if problem is not None:
        verdict = worst([Verdict.DEGRADED, *(t.verdict for t in judged)])
        return PairJudgement(verdict, problem, src, dst, ordered, cause="P2P unavailable")
    if not judged:
        reason = ordered[0].reason if ordered else f"GPU{src}->GPU{dst} not measured yet"
        return PairJudgement(Verdict.UNKNOWN, reason, src, dst, ordered)
    bad = max(judged, key=lambda t: (SEVERITY[t.verdict], -(t.ratio_expected or 1.0)))
    confounded = [t for t in ordered if t.verdict is Verdict.UNKNOWN and CONFOUNDED in t.reason]
    if bad.verdict is Verdict.HEALTHY and confounded:  # one answer: not "healthy" from the
        # tests the throttle left alone while the others could not be judged
        return PairJudgement(Verdict.UNKNOWN, f"GPU{src}->GPU{dst} unknown: "
                             f"{len(confounded)} of {len(ordered)} tests not judged; "
                             f"{confounded[0].reason}", src, dst, ordered)
    if bad.verdict is Verdict.HEALTHY:
        reason = f"GPU{src}->GPU{dst}: {len(judged)} test(s) healthy; {bad.reason}"
        return PairJudgement(Verdict.HEALTHY, reason, src, dst, ordered)
    return PairJudgement(bad.verdict, bad.reason, src, dst, ordered)
