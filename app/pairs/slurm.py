"""Slurm: each pair job is a 2-node batch job in a scavenger partition (and QOS), so it runs
only on idle nodes and any real job preempts it (the site's slurm.conf: the partition's
PriorityTier below the others, PreemptType=preempt/partition_prio, PreemptMode=CANCEL or
REQUEUE; deploy/slurm/scavenger.conf).

Least privilege: `sbatch` runs as the controller's own (unprivileged) user, never root; the
job carries no credential: its command line, script and environment name only the job id and
the server's URL, and each rank reads its own node's probe credential from the node's file
(readable by the account the job runs as, which is the controller's). `--exclusive` keeps any
other job off the two nodes while the test runs.
"""

from __future__ import annotations

import shlex
import subprocess
from dataclasses import dataclass

# squeue's states of a job still in the queue or running; anything else is over
ALIVE = ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "REQUEUED", "RESIZING",
         "SUSPENDED", "PREEMPTED")


class SlurmSubmitError(RuntimeError):
    """sbatch or squeue failed; the message holds their words."""


@dataclass(frozen=True)
class SlurmPairs:
    server_url: str
    partition: str = "scavenger"
    qos: str | None = None
    time_limit: str = "00:10:00"
    rank_command: str = "peerwatch pairs rank"  # how a node runs the rank (a wrapper may set env)
    sbatch: str = "sbatch"
    squeue: str = "squeue"
    extra_args: tuple[str, ...] = ()
    # where the ranks' output goes (sbatch's --output, its %j and %N patterns): a rank that
    # dies before rank 0 posts leaves no result, only these words
    output: str = "/dev/null"

    name = "slurm"

    def sbatch_argv(self, job_id: int, host: str, peer: str) -> list[str]:
        """The whole submission: two nodes, one task each, rank order = node order."""
        rank = f"{self.rank_command} --job {job_id} --server {shlex.quote(self.server_url)}"
        argv = [self.sbatch, "--parsable", f"--job-name=peerwatch-pair-{job_id}",
                f"--partition={self.partition}", "--nodes=2", "--ntasks-per-node=1",
                f"--nodelist={host},{peer}", "--exclusive", f"--time={self.time_limit}",
                f"--output={self.output}", "--no-requeue"]
        if self.qos:
            argv.append(f"--qos={self.qos}")
        argv += list(self.extra_args)
        # srun orders tasks by node name within the allocation: rank 0 is the host named
        # first in sort order; the rank finds its host's rank from the job it joins.
        argv.append(f"--wrap=srun --kill-on-bad-exit=1 {rank}")
        return argv

    def submit(self, job_id: int, host: str, peer: str) -> str:
        done = subprocess.run(self.sbatch_argv(job_id, host, peer), capture_output=True,
                              text=True, timeout=60)
        if done.returncode != 0:
            raise SlurmSubmitError(f"sbatch: {done.stderr.strip() or done.stdout.strip()}")
        return done.stdout.strip().split(";")[0]

    def alive(self, scheduler_jobs: list[str]) -> set[str]:
        """Which of these Slurm jobs are still queued or running."""
        if not scheduler_jobs:
            return set()
        done = subprocess.run([self.squeue, "-h", "-o", "%i %T", "-j", ",".join(scheduler_jobs)],
                              capture_output=True, text=True, timeout=60)
        if done.returncode != 0 and "Invalid job id" not in done.stderr:
            raise SlurmSubmitError(f"squeue: {done.stderr.strip()}")
        out = set()
        for line in done.stdout.splitlines():
            job, _, state = line.partition(" ")
            if state.strip() in ALIVE:
                out.add(job.strip())
        return out
