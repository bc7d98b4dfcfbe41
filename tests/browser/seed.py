"""Reports for the browser tests and the dashboard benchmark, built by the simulated fabric.

`history(...)` runs real probe passes (`probes.sweep.build_report`) on a `SimulatedFabric`
at backdated times, so the server receives what a probe would have sent over the last hour:
a few healthy sweeps, then the faults. The fabric's own clock follows the same fake time, so
error counters and foreign traffic grow the way they would have.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import httpx

from probes.faults import Fault
from probes.report import Report, TestName
from probes.simulated import SimulatedFabric
from probes.sweep import SweepOptions, build_report

# A quick sweep: enough tests to fill the matrix selector, cheap enough to build in ms.
QUICK_TESTS = (TestName.CE_WRITE, TestName.CE_BIDIR, TestName.LATENCY)


class FakeClock:
    """Seconds that only move when told: drives the fabric's counters and the report times."""

    def __init__(self, start: datetime) -> None:
        self.start = start
        self.seconds = 0.0

    def __call__(self) -> float:
        return self.seconds

    def now(self) -> datetime:
        return self.start + timedelta(seconds=self.seconds)


@dataclass(frozen=True)
class Episode:
    """From `at_s` seconds into the history on, these faults are in (cumulative)."""

    at_s: float
    faults: tuple[Fault, ...]


def history(preset: str, hostname: str, *, seed: int = 1, span_s: float = 3600,
            every_s: float = 600, episodes: Sequence[Episode] = (),
            tests: tuple[TestName, ...] = QUICK_TESTS) -> list[Report]:
    """Sweeps every `every_s` over the last `span_s` seconds, ending now."""
    clock = FakeClock(datetime.now(UTC) - timedelta(seconds=span_s))
    fabric = SimulatedFabric(preset, seed=seed, clock=clock, hostname=hostname)
    pending = sorted(episodes, key=lambda e: e.at_s)
    options = SweepOptions(tests=tests, timeout_s=None)
    reports = []
    while clock.seconds <= span_s:
        while pending and pending[0].at_s <= clock.seconds:
            fabric.inject(*pending.pop(0).faults)
        reports.append(build_report(fabric, options=options, now=clock.now))
        clock.seconds += every_s
    return reports


def post(base_url: str, token: str, reports: Iterable[Report]) -> int:
    """POST each report the way a probe does; returns how many the server took."""
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    taken = 0
    with httpx.Client(base_url=base_url, headers=headers, timeout=30) as client:
        for report in reports:
            response = client.post("/api/v1/reports", content=report.model_dump_json())
            if response.status_code >= 300:
                raise RuntimeError(
                    f"{report.host.hostname}: {response.status_code} {response.text}")
            taken += 1
    return taken
