"""A slow pair on a throttled GPU is not a fabric fault; a GPU throttled most of the time is
its own finding. Pure: clocks samples in (probes/clocks.py), labels and verdicts out.

- A sweep's throttle per GPU: the clocks-event reasons of its sample before and after the
  sweep (power, thermal, HW slowdown: never idle, application clocks, sync boost) and the
  rise of the power / thermal violation counters between them, which catches a throttle
  that came and went while the tests ran.
- A result is labelled with the throttled GPUs it touched ("GPU3 power-capped"), stored with
  it and shown beside its value.
- `explain_tests` / `explain_pairs` are the hook the judgement calls (and the attribution of
  app/analysis/health.py may call): a pair or test found slow while one of its GPUs was
  throttled in the newest sweep is not called degraded on that alone. It reads "slow,
  GPU3 power-capped during the test" and is `unknown` for the fabric (the evidence is
  confounded); a failure, a P2P problem or a link fault is judged as ever.
- `judge_throttled`: a GPU throttled in `most` of its newest `of` sweeps is degraded, with
  the reason and what to do; `explaining` says which throttles explain results before the
  pattern attribution runs (the newest sweep's, and those of a GPU throttled most of the
  time), so GPUThrottled owns a throttled GPU's slowness alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from peerwatch.app.analysis.fabric_health import GpuJudgement
from peerwatch.app.analysis.health import (
    CONFOUNDED,
    Judgement,
    PairJudgement,
    TestJudgement,
)
from peerwatch.app.analysis.verdict import Verdict
from peerwatch.probes.clocks import KIND_WORDS, GpuClocks, throttle_kinds

ACTIONS = {
    "power": "check the enforced power limit (nvidia-smi -q -d POWER) against the board's "
             "default and the rack's power budget or PSU",
    "thermal": "check cooling: inlet temperature, fans or liquid flow, dust (nvidia-smi -q -d "
               "TEMPERATURE)",
    "hw": "HW slowdown is the board protecting itself (power brake, over-temperature, "
          "high draw): check PSU and power brake signalling, then cooling; nvidia-smi -q -d "
          "PERFORMANCE shows which",
}


@dataclass(frozen=True)
class SweepThrottle:
    """One GPU held below its clocks during one sweep: the kinds and what showed them."""

    gpu: int
    kinds: tuple[str, ...]
    detail: str = ""  # "449 of 450 W, SM 1742 of 1980 MHz"

    def words(self) -> str:
        return " and ".join(KIND_WORDS[k] for k in self.kinds)

    def label(self) -> str:
        return f"GPU{self.gpu} {self.words()}"


def clocks_detail(c: GpuClocks) -> str:
    """"449 of 450 W, 37 C (slowdown at 89 C), SM 1742 of 1980 MHz": what a sample showed."""
    parts = []
    if c.power_mw is not None and c.power_limit_mw:
        parts.append(f"{c.power_mw / 1000:.0f} of {c.power_limit_mw / 1000:.0f} W")
    if c.temperature_c is not None and c.slowdown_temperature_c is not None:
        parts.append(f"{c.temperature_c} C (slowdown at {c.slowdown_temperature_c} C)")
    if c.sm_clock_mhz is not None and c.sm_clock_max_mhz:
        parts.append(f"SM {c.sm_clock_mhz} of {c.sm_clock_max_mhz} MHz")
    return ", ".join(parts)


def _rose(before: int | None, after: int | None) -> bool:
    return before is not None and after is not None and after > before


def sweep_throttles(before: Iterable[GpuClocks], after: Iterable[GpuClocks]
                    ) -> dict[int, SweepThrottle]:
    """Every GPU throttled at either sample or between them (a violation counter rose).
    An inventory pass gives one sample: pass it as both."""
    first = {c.gpu: c for c in before}
    last = {c.gpu: c for c in after}
    out = {}
    for gpu in sorted(set(first) | set(last)):
        b, a = first.get(gpu), last.get(gpu)
        kinds = set(throttle_kinds(b.reasons or 0) if b else ())
        kinds |= set(throttle_kinds(a.reasons or 0) if a else ())
        if b and a and _rose(b.violation_power_ns, a.violation_power_ns):
            kinds.add("power")
        if b and a and _rose(b.violation_thermal_ns, a.violation_thermal_ns):
            kinds.add("thermal")
        if kinds:
            shown = a if a and throttle_kinds(a.reasons or 0) else (b or a)
            assert shown is not None
            ordered = tuple(k for k in ("power", "thermal", "hw") if k in kinds)
            out[gpu] = SweepThrottle(gpu, ordered, clocks_detail(shown))
    return out


def result_label(gpus: Iterable[int], throttled: Mapping[int, SweepThrottle]) -> str | None:
    """ "GPU3 power-capped" for a result touching GPU3 while it was; None when none was."""
    found = [throttled[g].label() for g in sorted(set(gpus)) if g in throttled]
    return ", ".join(found)[:200] if found else None


def _explained(label: str, reason: str) -> str:
    return f"slow, {label} during the test ({CONFOUNDED}): {reason}"


def _explain_test(j: TestJudgement, now: Mapping[int, SweepThrottle]) -> TestJudgement:
    label = result_label((j.src, j.dst), now)
    if j.verdict is not Verdict.DEGRADED or label is None:
        return j
    if j.latest is not None and j.latest.error is not None:
        return j  # a failure is a failure, throttled or not
    return replace(j, verdict=Verdict.UNKNOWN, low_since=None,
                   reason=_explained(label, j.reason))


def _explain_pair(j: PairJudgement, now: Mapping[int, SweepThrottle]) -> PairJudgement:
    label = result_label((j.src, j.dst), now)
    if j.verdict is not Verdict.DEGRADED or label is None:
        return j
    if any(t.verdict is Verdict.DEGRADED for t in j.tests) or "P2P" in j.reason:
        return j  # a test still degraded (a failure) or P2P lost: not the clocks' doing
    return replace(j, verdict=Verdict.UNKNOWN, reason=_explained(label, j.reason))


def explain_tests(tests: Mapping[tuple, TestJudgement], now: Mapping[int, SweepThrottle]
                  ) -> dict[tuple, TestJudgement]:
    """Each (pair, test) verdict, a degraded one explained when a GPU of it was throttled in
    the newest sweep (`now`)."""
    return {k: _explain_test(t, now) if now else t for k, t in tests.items()}


def explain_pairs(pairs: Sequence[PairJudgement], now: Mapping[int, SweepThrottle]
                  ) -> list[PairJudgement]:
    """Pair verdicts degraded by a slow comparison alone (fleet peers) explained the same."""
    return [_explain_pair(p, now) if now else p for p in pairs]


def throttle_facts(sweeps: Sequence[SweepThrottle | None], most: int, of: int
                   ) -> dict[str, Any] | None:
    """{"kinds", "held", "of"} when the GPU was throttled in at least `most` of its newest
    `of` sweeps (`sweeps` newest first, None where it ran free): stored with the GPU's
    verdict, read by the GPUThrottled alert and /metrics; None otherwise."""
    recent = list(sweeps[:of])
    held = [s for s in recent if s is not None]
    if len(recent) < min(most, of) or len(held) < most:
        return None
    kinds = [k for k in ("power", "thermal", "hw") if any(k in s.kinds for s in held)]
    return {"kinds": kinds, "held": len(held), "of": len(recent)}


def judge_throttled(gpu: int, sweeps: Sequence[SweepThrottle | None], most: int, of: int
                    ) -> Judgement | None:
    """The GPU's own verdict when `throttle_facts` finds it throttled most of the time."""
    facts = throttle_facts(sweeps, most, of)
    if facts is None:
        return None
    held = [s for s in sweeps[:of] if s is not None]
    recent, kinds = sweeps[:of], facts["kinds"]
    newest = held[0]
    words = " and ".join(KIND_WORDS[k] for k in kinds)
    detail = f" (newest: {newest.detail})" if newest.detail else ""
    action = "; ".join(ACTIONS[k] for k in kinds)
    return Judgement(Verdict.DEGRADED,
                     f"GPU{gpu} {words} in {len(held)} of its last {len(recent)} sweeps"
                     f"{detail}: its transfers are slower for it, not the fabric; "
                     f"action: {action}")


def newest(history: Mapping[int, Sequence[SweepThrottle | None]]) -> dict[int, SweepThrottle]:
    """GPU -> its throttle in the newest sweep, for GPUs that were throttled in it."""
    return {g: h[0] for g, h in history.items() if h and h[0] is not None}


def explaining(history: Mapping[int, Sequence[SweepThrottle | None]], most: int, of: int
               ) -> dict[int, SweepThrottle]:
    """GPU -> the throttle that explains its slow results before any attribution: throttled
    in the newest sweep, or throttled most of the time (`throttle_facts`: GPUThrottled's
    page) with its newest throttled sweep. A power cap that comes and goes leaves the GPU's
    low runs degraded in a sweep that ran free; they are still the throttle's, so the GPU
    is not also "slow with every peer" (GPUPeerCopiesSlow) nor slow on its own copies."""
    out = newest(history)
    for gpu, h in history.items():
        if gpu not in out and throttle_facts(h, most, of) is not None:
            out[gpu] = next(s for s in h[:of] if s is not None)
    return out


def with_throttle_verdicts(gpus: Sequence[GpuJudgement],
                           history: Mapping[int, Sequence[SweepThrottle | None]],
                           most: int, of: int) -> list[GpuJudgement]:
    """Each GPU verdict, made degraded (or its reason extended) where `judge_throttled`
    finds the GPU throttled most of the time."""
    out = []
    for g in gpus:
        found = judge_throttled(g.gpu, history.get(g.gpu, ()), most, of)
        if found is None:
            out.append(g)
        elif g.verdict in (Verdict.HEALTHY, Verdict.UNKNOWN):
            out.append(replace(g, verdict=found.verdict, reason=found.reason))
        else:
            out.append(replace(g, reason=f"{g.reason}; {found.reason}"))
    return out


def throttled_facts(history: Mapping[int, Sequence[SweepThrottle | None]], most: int,
                    of: int) -> dict[int, dict[str, Any]]:
    """GPU -> `throttle_facts`, for the GPUs throttled most of the time."""
    return {g: f for g, h in sorted(history.items())
            if (f := throttle_facts(h, most, of)) is not None}
