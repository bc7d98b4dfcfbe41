"""A usual key judged in one pass over its numbers (`plain_keys.judge_plain`) gets the verdict
and the stored bytes the general way (`Running`, `judge_test`, `with_step`) gives it: random
states and sweeps, both orientations, judged both ways through `judge_tests`, compared key by
key; and the keys it must leave to the general way are left."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from peerwatch.app.analysis.expected import Expectation
from peerwatch.app.analysis.health import Sample
from peerwatch.app.judging import pair_tests
from peerwatch.app.judging.expectations import Expectations, KeyExpectation
from peerwatch.app.judging.key_rules import TestRules, rules_of
from peerwatch.app.judging.load import TestInputs
from peerwatch.app.judging.plain_keys import judge_plain, limits_of
from peerwatch.app.judging.running import BLOCK, Running, epoch_us, sample
from peerwatch.app.records.fabric import HostFabric
from peerwatch.app.records.keys import PairKey
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.tables.inventory import Host
from peerwatch.probes.report import TestName, Unit, unit_of

RULES: TestRules = rules_of(Settings())
LIMITS = limits_of(RULES)
NOW = datetime(2026, 12, 7, 8, 0, tzinfo=UTC)
SWEEP = timedelta(minutes=10)
TESTS = [TestName.CE_WRITE, TestName.LATENCY]  # a bandwidth and a time: both orientations


def _value(rng: random.Random, test: TestName, step: float = 1.0) -> float:
    """Mostly the normal figure (after a `step` down) with noise; at times a drop, a small
    drift or a zero."""
    normal = 5.0 / step if unit_of(test) is Unit.SECONDS else 100.0 * step
    roll = rng.random()
    factor = (0.5 if roll < 0.05 else 0.93 if roll < 0.12 else 0.0 if roll < 0.13
              else rng.gauss(1.0, 0.004))
    return normal / factor if unit_of(test) is Unit.SECONDS and factor else normal * factor


def _state(rng: random.Random, test: TestName, step: float) -> Running:
    blocks = tuple((_value(rng, test), rng.random(), 1_700_000_000 + i)
                   for i in range(rng.choice([0, 0, 1, 5, 9])))
    part = tuple(_value(rng, test) for _ in range(rng.randrange(BLOCK)))
    n = rng.randrange(RULES.keep + 1)
    judged = tuple(sample(NOW - SWEEP * (n - i) * rng.choice([1, 1, 1, 20]),
                          _value(rng, test, step)) for i in range(n))
    judged = tuple(sorted(judged, key=lambda s: s.at))
    contended = (sample(NOW - SWEEP / 2, 50.0, True, None, 10**9),) \
        if rng.random() < 0.1 else ()
    failures = (sample(NOW - SWEEP / 3, None, False, "copy failed"),) \
        if rng.random() < 0.1 else ()
    return Running(blocks, part, judged, contended, failures)


def _new(rng: random.Random, test: TestName, step: float) -> list[Sample]:
    out = []
    for i in range(rng.choice([0, 1, 1, 1, 1, 2])):
        at = NOW + SWEEP * (i + 1)
        roll = rng.random()
        out.append(sample(at, None, False, "timed out") if roll < 0.04 else
                   sample(at, _value(rng, test, step), True, None, 10**9) if roll < 0.08
                   else sample(at, _value(rng, test, step)))
    return out


def _expect(rng: random.Random, test: TestName) -> KeyExpectation:
    unit = unit_of(test)
    normal = 5.0 if unit is Unit.SECONDS else 100.0
    full = None if rng.random() < 0.15 else Expectation(normal * rng.choice([0.9, 1.0, 1.6]),
                                                        unit, "NV18 x 26.6 GB/s x 0.83")
    narrowed = rng.random() < 0.1
    now = None if narrowed or rng.random() < 0.2 else normal
    return KeyExpectation(full, narrowed, now)


def _inputs(seed: int) -> tuple[TestInputs, dict[PairKey, KeyExpectation]]:
    rng = random.Random(seed)
    inputs, figures = TestInputs(), {}
    for src in range(8):
        for dst in range(8):
            for test in TESTS:
                key = (src, dst, test)
                figures[key] = _expect(rng, test)
                step = rng.choice([1.0] * 8 + [0.95, 0.9])  # a key's recent figures
                state = _state(rng, test, step)
                base = state.baseline(RULES.min_samples)
                stored = base if rng.random() < 0.9 else None  # at times a stale stored one
                if rng.random() < 0.95:
                    inputs.states[key] = state.pack(stored)
                if new := _new(rng, test, step):
                    inputs.new[key] = new
                if rng.random() < 0.1:
                    inputs.low_before[key] = NOW - 3 * SWEEP
    return inputs, figures


def _judged(inputs: TestInputs, figures: dict[PairKey, KeyExpectation]) -> tuple[dict, dict]:
    fabric = HostFabric(host=Host(name="plain"))
    return pair_tests.judge_tests(inputs, fabric, Expectations(fabric, dict(figures)), RULES,
                                  NOW + 2 * SWEEP)


@pytest.mark.parametrize("seed", range(12))
def test_a_plain_key_is_judged_and_stored_as_the_general_way_does(
        seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    inputs, figures = _inputs(seed)
    taken: list[PairKey] = []

    def counted(key: PairKey, *args: object) -> object:
        found = judge_plain(key, *args)  # type: ignore[arg-type]
        if found is not None:
            taken.append(key)
        return found
    monkeypatch.setattr(pair_tests, "judge_plain", counted)
    verdicts, states = _judged(inputs, figures)
    monkeypatch.setattr(pair_tests, "judge_plain", lambda *args: None)
    general, general_states = _judged(inputs, figures)
    assert list(verdicts) == list(general)
    for key in verdicts:
        assert verdicts[key] == general[key], key
        assert verdicts[key].reason == general[key].reason, key
        assert states[key] == general_states[key], key
    # both ways were walked: this is no comparison of the general way with itself
    assert len(taken) > len(verdicts) // 4
    assert len(verdicts) - len(taken) > len(verdicts) // 10


def _usual() -> tuple[bytes, KeyExpectation]:
    state = Running(part=tuple(100.0 for _ in range(RULES.min_samples)),
                    judged=tuple(sample(NOW - SWEEP * i, 100.0) for i in (2, 1)))
    full = Expectation(100.0, unit_of(TestName.CE_WRITE), "NV18")
    return state.pack(state.baseline(RULES.min_samples)), KeyExpectation(full, False, 100.0)


KEY = (0, 1, TestName.CE_WRITE)
SINCE = epoch_us(NOW - timedelta(hours=1))


def test_the_usual_key_is_taken() -> None:
    data, expect = _usual()
    found = judge_plain(KEY, data, [sample(NOW, 100.0)], expect, LIMITS, SINCE)
    assert found is not None and found[0].verdict.value == "healthy"


@pytest.mark.parametrize("why, new", [
    ("contended now", [sample(NOW, 100.0, True, None, 10**9)]),
    ("failed now", [sample(NOW, None, False, "timed out")]),
    ("low", [sample(NOW, 50.0)]),
    ("drifting below its baseline", [sample(NOW, 95.0)]),
])
def test_a_key_not_plain_is_left_to_the_general_way(why: str, new: list[Sample]) -> None:
    data, expect = _usual()
    assert judge_plain(KEY, data, new, expect, LIMITS, SINCE) is None, why


def test_a_state_holding_a_failure_or_a_filling_block_is_left_to_the_general_way() -> None:
    _, expect = _usual()
    failed = Running(part=(100.0,) * 3, failures=(sample(NOW - SWEEP, None, False, "x"),))
    assert judge_plain(KEY, failed.pack(None), [sample(NOW, 100.0)], expect, LIMITS,
                       SINCE) is None
    full = Running(part=(100.0,) * (BLOCK - 1))
    assert judge_plain(KEY, full.pack(full.baseline(RULES.min_samples)),
                       [sample(NOW, 100.0)], expect, LIMITS, SINCE) is None
