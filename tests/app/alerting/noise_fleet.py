"""A noisy, healthy fleet on a fake clock, for the change test's false-alarm count
(`app/analysis/change_point.py`): `hosts` simulated hosts (the simulator's own noise), a
sweep every 10 minutes for `days` days, each host with random episodes of what a healthy
host meets: a foreign job copying over its links (contention, 1-3 sweeps, a few a day) and
its GPU held below its clocks (a power cap, thermal or HW slowdown, 88-95 % speed, 1-8
sweeps, about one a day). No fault: every alert but GPUThrottled (which says a throttle is
on, truly) is a false alarm, and so is any pair or GPU verdict the change test degraded.

Used at smoke size by tests/app/alerting/test_change_detection.py and at full size (20
hosts x 7 days) by bench/change_noise.py. It drives the server's real ingest, judgement
and rules through `SimHost`; hosts step in turn, so the fleet's history fills evenly.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Literal

from sqlalchemy.orm import Session, sessionmaker

from peerwatch.app.analysis.verdict import Verdict
from peerwatch.app.demo.faults import apply_faults
from peerwatch.app.queries.health import host_health
from peerwatch.app.runtime.config import Settings
from peerwatch.probes.sim.faults import Contention, Fault, ThrottledGpu
from tests.app.alerting.simhost import SimHost

SWEEP_S = 600
PRESET = "h200x2"
TRUE_ALARMS = {"GPUThrottled"}
STEP_WORDS = "stepped down"  # what the change test's reason says (change_point.StepDown)


@dataclass
class Episode:
    first: int  # sweep index
    last: int
    fault: Fault


@dataclass
class NoiseResult:
    sweeps: int = 0  # host sweeps judged after the warm-up
    episodes: dict[str, int] = field(default_factory=dict)
    false_alarms: list[str] = field(default_factory=list)  # "host: rule labels"
    false_steps: list[str] = field(default_factory=list)  # verdicts the change test degraded


def episodes(rng: random.Random, sweeps: int, gpus: int, first: int) -> list[Episode]:
    """A host's random timeline from sweep `first` on: per day ~3 contention and ~1
    throttle episodes."""
    out = []
    per_day = 86_400 // SWEEP_S
    for _ in range(max(1, round(3 * sweeps / per_day))):
        start, g = rng.randrange(first, sweeps), rng.randrange(gpus)
        peer = rng.choice([p for p in range(gpus) if p != g])
        out.append(Episode(start, start + rng.randint(0, 2), Contention(gpu=g, peer=peer)))
    for _ in range(max(1, round(sweeps / per_day))):
        start = rng.randrange(first, sweeps)
        reason: Literal["power", "thermal", "hw"] = rng.choice(("power", "thermal", "hw"))
        out.append(Episode(start, start + rng.randint(0, 7), ThrottledGpu(
            gpu=rng.randrange(gpus), reason=reason, factor=round(rng.uniform(0.88, 0.95), 3))))
    return out


def _wanted(timeline: list[Episode], i: int) -> set[Fault]:
    return {e.fault for e in timeline if e.first <= i <= e.last}


def _count(host: SimHost, out: NoiseResult) -> None:
    for a in host.alerts("pending") + host.alerts("firing"):
        if a.rule not in TRUE_ALARMS:
            out.false_alarms.append(f"{host.hostname}: {a.rule} {a.labels}")
    with host.sessions() as s:
        health = host_health(s, host.settings, host.hostname)
    out.false_steps += [f"{host.hostname}: {t.reason}" for t in health.tests.values()
                        if t.verdict in (Verdict.DEGRADED, Verdict.DOWN) and STEP_WORDS in t.reason]


def run(sessions: sessionmaker[Session], settings: Settings, hosts: int, days: float,
        seed: int = 38, warmup: int = 8) -> NoiseResult:
    """The fleet's history, counting false alarms at every sweep after `warmup` (the
    baseline needs its samples first)."""
    rng = random.Random(seed)
    sweeps = int(days * 86_400 // SWEEP_S)
    fleet = [SimHost(sessions, settings, preset=PRESET, hostname=f"noise-{i:02d}")
             for i in range(hosts)]
    plans = {h.hostname: episodes(rng, sweeps, len(h.fabric.preset.gpus), warmup)
             for h in fleet}
    out = NoiseResult()
    for plan in plans.values():
        for e in plan:
            kind = type(e.fault).__name__
            out.episodes[kind] = out.episodes.get(kind, 0) + 1
    for i in range(sweeps):
        for h in fleet:
            apply_faults(h.fabric, _wanted(plans[h.hostname], i))
            h.step(SWEEP_S, "sweep")
            if i >= warmup:
                out.sweeps += 1
                _count(h, out)
    return out
