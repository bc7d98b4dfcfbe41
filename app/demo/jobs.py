"""Job snapshots for the demo: a few Slurm jobs' prolog and epilog snapshots, so the host
page's job timeline and a job's diff have something to show the moment the demo opens.

Each job's fabric is a simulated host like the live one (same preset, name and GPU UUIDs),
walked on a fake clock from the job's start to its end through the scenario's faults, so a
job that ran while the scenario broke something shows it in its diff: job 81240 on hgx8-01
ran while GPU2 link 7 went down and link 6 replayed. The snapshots go through the server's
own checks and store (`check_snapshot`, `store_snapshot`), as the backfill's reports do.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy.orm import Session, sessionmaker

from peerwatch.app.demo.faults import apply_faults
from peerwatch.app.demo.fleet import DemoHost, find_host
from peerwatch.app.demo.scenario import HOUR, Scenario
from peerwatch.app.services.snapshots import check_snapshot, store_snapshot
from peerwatch.probes.report import utcnow
from peerwatch.probes.sim.simulated import SimulatedFabric
from peerwatch.probes.snapshot import Phase, Snapshot
from peerwatch.probes.snapshot_read import take_snapshot

log = logging.getLogger(__name__)
STEP_S = 60.0  # how finely the scenario's faults are followed through a job


@dataclass(frozen=True)
class DemoJob:
    preset: str
    ordinal: int
    job_id: str
    start_s: float  # scenario time (seconds from the live start; the past is negative)
    end_s: float
    gpus: tuple[int, ...] = tuple(range(8))  # the GPUs it holds (the demo's job mapping)


DEMO_JOBS = (
    DemoJob("hgx8", 1, "81231", -5.0 * HOUR, -4.4 * HOUR),
    DemoJob("h200x2", 1, "81236", -3.0 * HOUR, -2.2 * HOUR, (0, 1)),
    DemoJob("hgx8", 1, "81240", -2.1 * HOUR, -1.4 * HOUR),  # a link goes down during it
    DemoJob("hgx8", 1, "81247", -0.9 * HOUR, -0.3 * HOUR),  # after the link came back
)
# Jobs still running when the demo opens: in the job mapping (app/demo/gpu_jobs.py), with no
# epilog snapshot yet. h200x2-01's GPU0<->GPU1 slows from +60 s during job 81255; job 81252
# holds half of hgx8-01 when GPU3 loses two links at +180 s.
LIVE_JOBS = (
    DemoJob("hgx8", 1, "81252", -0.2 * HOUR, 6 * HOUR, (0, 1, 2, 3)),
    DemoJob("h200x2", 1, "81255", -0.1 * HOUR, 6 * HOUR, (0, 1)),
)


def job_snapshots(host: DemoHost, job: DemoJob, scenario: Scenario,
                  live_start: datetime) -> tuple[Snapshot, Snapshot]:
    """The job's prolog and epilog snapshots, dated at its start and end."""
    clock = [0.0]
    fabric = SimulatedFabric(host.preset, seed=host.seed + 104_729, hostname=host.name,
                             clock=lambda: clock[0])

    def at(t: float, phase: Phase) -> Snapshot:
        clock[0] = t - job.start_s
        apply_faults(fabric, scenario.faults_at(host.name, t))
        snap = take_snapshot(fabric, job_id=job.job_id, phase=phase)
        return snap.model_copy(update={"taken_at": live_start + timedelta(seconds=t)})

    before = at(job.start_s, Phase.PROLOG)
    t = job.start_s
    while t + STEP_S < job.end_s:  # follow faults that come and go while the job runs
        t += STEP_S
        clock[0] = t - job.start_s
        apply_faults(fabric, scenario.faults_at(host.name, t))
        fabric.link_counters(0)  # counts the errors grown so far under these faults
    return before, at(job.end_s, Phase.EPILOG)


def store_demo_jobs(sessions: sessionmaker[Session], fleet: list[DemoHost], scenario: Scenario,
                    live_start: datetime) -> int:
    """Store every demo job whose host is in the fleet; the number of snapshots stored."""
    stored = 0
    for job in DEMO_JOBS:
        host = find_host(fleet, job.preset, job.ordinal)
        if host is None or host.ordinal != job.ordinal:
            continue
        for snap in job_snapshots(host, job, scenario, live_start):
            if problems := check_snapshot(snap, utcnow()):
                log.error("demo: job snapshot of %s refused: %s", host.name, problems[0])
                continue
            with sessions() as session:
                store_snapshot(session, snap, utcnow())
            stored += 1
    return stored
