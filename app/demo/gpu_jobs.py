"""The demo's job mapping: each simulated host's agent reads a per-GPU job mapping directory
(`probes/agent/job_mapping.py`), written here as the shipped Slurm prolog and epilog write
it (deploy/slurm/peerwatch-job-mapping.sh: one file per GPU index holding its jobs' ids, a
line each; no file for a GPU without a job), for the demo's jobs (`app/demo/jobs.py`) at
the scenario's time. So the demo's series, verdicts and job pages name real job ids, from
the same files a Slurm node would have.
"""

from __future__ import annotations

from pathlib import Path

from peerwatch.app.demo.fleet import DemoHost, find_host
from peerwatch.app.demo.jobs import DEMO_JOBS, LIVE_JOBS


def jobs_at(fleet: list[DemoHost], host: DemoHost, t: float) -> dict[int, list[str]]:
    """{GPU: job ids} of `host` at scenario time `t`."""
    held: dict[int, list[str]] = {}
    for job in (*DEMO_JOBS, *LIVE_JOBS):
        if not job.start_s <= t < job.end_s:
            continue
        if find_host(fleet, job.preset, job.ordinal) is not host or host.ordinal != job.ordinal:
            continue
        for gpu in job.gpus:
            held.setdefault(gpu, []).append(job.job_id)
    return held


def write_mapping(directory: Path, held: dict[int, list[str]]) -> None:
    """Make `directory` say `held`: what a prolog adds and an epilog removes, in one go."""
    directory.mkdir(parents=True, exist_ok=True)
    for old in directory.iterdir():
        if old.name.isdigit() and int(old.name) not in held:
            old.unlink()
    for gpu, jobs in held.items():
        path = directory / str(gpu)
        text = "".join(f"{j}\n" for j in jobs)
        if not path.exists() or path.read_text() != text:
            tmp = directory / f"{gpu}.tmp"
            tmp.write_text(text)
            tmp.replace(path)


def map_host(directory: Path, fleet: list[DemoHost], host: DemoHost, t: float) -> None:
    write_mapping(directory, jobs_at(fleet, host, t))
