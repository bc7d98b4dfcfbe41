"""The change test's false-alarm rate and detection delay (app/analysis/change_point.py).

False alarms: a noisy, healthy fleet of 20 simulated `h200x2` hosts, a sweep every 10
minutes for 7 days (1,008 sweeps each), each host meeting random contention (~3 a day) and
throttle episodes (~1 a day, 88-95 % speed), through the server's own ingest, judgement and
rules on SQLite (`tests/app/alerting/noise_fleet.py`: the test suite's harness, so the bench
and `make test` count the same way). Reference: 0 false alarms (every alert but
GPUThrottled, and every verdict the change test degraded).

Detection: an `hgx8` host, 8 sweeps healthy, then every pair of GPU3 delivering 90 % (and,
apart, 85 %): the sweep on which all 14 of its pairs read degraded, over `TRIALS` seeds.
Reference: within 3 sweeps (10 %), 2 sweeps (15 %).
"""

from __future__ import annotations

import time
from pathlib import Path

from bench.helpers.size import sized
from bench.ingest import sqlite_url
from peerwatch.app.analysis.verdict import Verdict
from peerwatch.app.judging.sessions import make_sessionmaker
from peerwatch.app.queries.health import host_health
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.db import make_engine, upgrade_to_head
from peerwatch.probes.sim.faults import BandwidthFactor
from tests.app.alerting import noise_fleet
from tests.app.alerting.simhost import SimHost

HOSTS = sized(20, 3)
DAYS = sized(7.0, 0.5)
TRIALS = sized(5, 1)


def _settings(url: str) -> Settings:
    return Settings(database_url=url, data_dir=Path(url.removeprefix("sqlite:///")).parent,
                    stale_after_s=1800.0)  # a report every 10 min: never stale


def _sessions(settings: Settings):  # type: ignore[no-untyped-def]
    engine = make_engine(settings)
    upgrade_to_head(engine)
    return make_sessionmaker(engine)


def false_alarms() -> int:
    with sqlite_url() as url:
        settings = _settings(url)
        started = time.perf_counter()
        result = noise_fleet.run(_sessions(settings), settings, HOSTS, DAYS)
        took = time.perf_counter() - started
    host_days = HOSTS * DAYS
    print(f"  noise fleet: {HOSTS} hosts x {DAYS:g} days, {result.sweeps} host sweeps judged, "
          f"episodes {result.episodes}, {took:.0f} s")
    print(f"  false alarms: {len(result.false_alarms)} alerts, {len(result.false_steps)} "
          f"change-test verdicts ({len(result.false_alarms) / host_days:.3f} per host-day; "
          "reference 0)")
    for line in (result.false_alarms + result.false_steps)[:10]:
        print(f"    {line[:200]}")
    return len(result.false_alarms) + len(result.false_steps)


def detected_on(factor: float, seed: int) -> int | None:
    """The sweep after the step on which every pair of GPU3 reads degraded (None: not in 6)."""
    with sqlite_url() as url:
        settings = _settings(url)
        host = SimHost(_sessions(settings), settings, preset="hgx8", hostname=f"step-{seed}")
        host.fabric.seed = seed
        for _ in range(8):
            host.step(600, "sweep")
        host.inject(*[BandwidthFactor(src=3, dst=p, factor=factor) for p in range(8) if p != 3])
        for sweep in range(1, 7):
            host.step(600, "sweep")
            with host.sessions() as s:
                pairs = host_health(s, settings, host.hostname).judgement.pairs
            if {p.verdict for p in pairs if 3 in (p.src, p.dst)} == {Verdict.DEGRADED}:
                return sweep
    return None


def main() -> int:
    missed = false_alarms()
    for factor, within in ((0.90, 3), (0.85, 2)):
        found = [detected_on(factor, seed) for seed in range(TRIALS)]
        late = [f for f in found if f is None or f > within]
        print(f"  a {100 - factor * 100:.0f} % step on one GPU: degraded on sweep {found} "
              f"(reference: within {within})")
        missed += len(late)
    return 1 if missed else 0


if __name__ == "__main__":
    from bench.helpers.cli import no_options

    no_options(__doc__, __file__)
    raise SystemExit(main())
