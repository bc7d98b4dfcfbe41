"""Which job holds each GPU, read from a per-GPU job mapping directory.

The convention is dcgm-exporter's `--hpc-job-mapping-dir` (DCGM_HPC_JOB_MAPPING_DIR), so one
directory written by the Slurm prolog serves both exporters: one file per GPU, named by the
GPU's index (`0`, `1` ...; `2.0`, a MIG instance of GPU 2, counts for GPU 2), holding the
ids of the jobs on it, one per line. peerwatch's own prolog and epilog write and remove the
files (deploy/slurm/peerwatch-prolog.sh, peerwatch-epilog.sh).

What is read is only claimed when it can be trusted; everything else is a warning naming
the file, and that GPU claims nothing:
- no directory (not a job node, or no job ever ran): no mapping, no warning;
- a file older than the host's boot: stale (no job survives a reboot; an epilog that never
  ran left it);
- a file for a GPU the host does not have, a line that is not a job id, a file too big to
  be a mapping, more than MAX_JOBS_PER_GPU jobs.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from peerwatch.probes.agent.pod_resources import read_pod_jobs
from peerwatch.probes.report import (
    JOB_ID,
    JOB_ID_RULE,
    MAX_JOBS_PER_GPU,
    GpuJob,
    JobSource,
    ProbeError,
    Report,
)

GPU_FILE = re.compile(r"(\d{1,3})(?:\.(\d{1,3}))?")  # "3", or "3.1" (MIG instance 1 of GPU 3)
MAX_FILE_BYTES = 4096


@dataclass
class JobMapping:
    """The jobs found, and the warnings (as the report's `errors`) for what was not used."""

    jobs: list[GpuJob] = field(default_factory=list)
    warnings: list[ProbeError] = field(default_factory=list)

    def warn(self, path: Path, message: str) -> None:
        self.warnings.append(ProbeError(where=f"job_mapping {str(path)[:180]}",
                                        message=message[:2000]))


def boot_time(stat: Path = Path("/proc/stat")) -> float | None:
    """When the host booted (epoch seconds), from the kernel's `btime`; None if unknown."""
    try:
        for line in stat.read_text().splitlines():
            if line.startswith("btime "):
                return float(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def read_job_mapping(directory: Path, gpus: set[int],
                     booted_at: float | None = None) -> JobMapping:
    """The jobs of each GPU in `gpus` named by the files of `directory`."""
    out = JobMapping()
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except FileNotFoundError:
        return out
    except OSError as exc:
        out.warn(directory, f"cannot read the job mapping directory: {exc}")
        return out
    found: dict[int, list[str]] = {}
    for entry in entries:
        match = GPU_FILE.fullmatch(entry.name)
        if match is None or not entry.is_file():
            continue  # not a mapping file (dcgm-exporter skips these too)
        gpu = int(match.group(1))
        jobs = _read_file(Path(entry.path), gpu, gpus, booted_at, out)
        for job in jobs:
            if job not in found.setdefault(gpu, []):
                found[gpu].append(job)
    for gpu, jobs in sorted(found.items()):
        if len(jobs) > MAX_JOBS_PER_GPU:
            out.warn(directory / str(gpu), f"{len(jobs)} jobs on GPU {gpu}: more than "
                     f"{MAX_JOBS_PER_GPU} cannot be a real mapping; none claimed")
            continue
        out.jobs += [GpuJob(gpu=gpu, job=j, source=JobSource.MAPPING_DIR) for j in jobs]
    return out


def _read_file(path: Path, gpu: int, gpus: set[int], booted_at: float | None,
               out: JobMapping) -> list[str]:
    """The job ids of one GPU file, or [] with a warning when the file cannot be trusted."""
    try:
        st = path.stat()
        if st.st_size > MAX_FILE_BYTES:
            out.warn(path, f"{st.st_size} bytes: too big for a job mapping file "
                     f"(at most {MAX_FILE_BYTES}); ignored")
            return []
        text = path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        out.warn(path, f"cannot read the job mapping file: {exc}")
        return []
    if gpu not in gpus:
        have = ", ".join(map(str, sorted(gpus))) or "none"
        out.warn(path, f"names GPU {gpu}, which this host does not have (GPUs: {have}); "
                 "ignored")
        return []
    if booted_at is not None and st.st_mtime < booted_at:
        out.warn(path, "stale: written before this host booted (an epilog that never ran "
                 "left it); ignored")
        return []
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    bad = [line for line in lines if not JOB_ID.fullmatch(line)]
    if bad:
        out.warn(path, f"line {bad[0][:80]!r} is not a job id ({JOB_ID_RULE}); "
                 "the file is ignored")
        return []
    return lines


def with_jobs(report: Report, mapping_dir: Path | None, kubelet_socket: Path | None) -> Report:
    """`report` with the jobs holding its GPUs and the warnings of reading them (the
    worker's hook, probes/agent/passes.py). Both sources may answer (a Slurm-on-Kubernetes node);
    a (GPU, job) is listed once."""
    gpus = report.inventory.gpus
    found = JobMapping()
    if mapping_dir is not None:
        found = read_job_mapping(mapping_dir, {g.index for g in gpus}, boot_time())
    if kubelet_socket is not None:
        pods, warnings = read_pod_jobs(gpus, kubelet_socket)
        found.jobs += pods
        found.warnings += warnings
    if not found.jobs and not found.warnings:
        return report
    jobs = list({(j.gpu, j.job): j for j in found.jobs}.values())
    return report.model_copy(update={"jobs": jobs, "errors": [*report.errors,
                                                              *found.warnings]})
