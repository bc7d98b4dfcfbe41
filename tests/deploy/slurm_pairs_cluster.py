"""A real Slurm cluster of several nodes on one machine for the pair-job tests: `munged`,
`slurmctld` and one `slurmd -N <node>` per node (Debian's slurm-wlm is built with multiple
slurmd support), each on its own port, all at 127.0.0.1. Two partitions: `main` (the real
jobs, PriorityTier 10) and `scavenger` (the pair jobs, PriorityTier 1) with
PreemptType=preempt/partition_prio and PreemptMode=CANCEL: a real job preempts a pair job.

Reuses slurm_cluster.py's checks, starts and stops; paths and ports are private to the test
directory, so it never meets another Slurm or munge on the machine.
"""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from bench.helpers.serve import free_port
from tests.deploy.slurm_cluster import (
    MUNGE_KEY,
    START_LIMIT_S,
    Cluster,
    _start,
    _stop,
    require_slurm,
)


@dataclass
class PairsCluster(Cluster):
    def squeue(self) -> dict[str, str]:
        """Job id -> state of every job in the queue."""
        done = subprocess.run(["squeue", "-h", "-o", "%i %T"], env=self.env,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return dict(line.split() for line in done.stdout.splitlines() if line.strip())


def _conf(d: Path, nodes: tuple[str, ...]) -> str:
    host = socket.gethostname().split(".")[0]
    lines = [
        "ClusterName=pwpairs", f"SlurmctldHost={host}(127.0.0.1)", "SlurmUser=root",
        "SlurmdUser=root", "AuthType=auth/munge", f"AuthInfo=socket={d}/munge.sock",
        "CredType=cred/munge", "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none",
        "JobAcctGatherType=jobacct_gather/none", "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core", "MpiDefault=none", "ReturnToService=2",
        f"SlurmctldPort={free_port()}", f"StateSaveLocation={d}/state",
        f"SlurmdSpoolDir={d}/spool/%n", f"SlurmctldPidFile={d}/slurmctld.pid",
        f"SlurmdPidFile={d}/slurmd-%n.pid", f"SlurmctldLogFile={d}/slurmctld.log",
        f"SlurmdLogFile={d}/slurmd-%n.log",
        "PreemptType=preempt/partition_prio", "PreemptMode=CANCEL",
        *(f"NodeName={n} NodeHostname={host} NodeAddr=127.0.0.1 Port={free_port()} CPUs=1 "
          "State=UNKNOWN" for n in nodes),
        "PartitionName=main Nodes=ALL Default=YES MaxTime=INFINITE State=UP PriorityTier=10",
        "PartitionName=scavenger Nodes=ALL MaxTime=INFINITE State=UP PriorityTier=1 "
        "PreemptMode=CANCEL",
    ]
    return "\n".join(lines) + "\n"


@contextmanager
def pairs_cluster(d: Path, nodes: tuple[str, ...]) -> Iterator[PairsCluster]:
    require_slurm()
    (d / "state").mkdir(parents=True)
    for n in nodes:
        (d / "spool" / n).mkdir(parents=True)
    conf = d / "slurm.conf"
    conf.write_text(_conf(d, nodes))
    env = {**os.environ, "SLURM_CONF": str(conf)}
    try:
        _start(["munged", f"--socket={d}/munge.sock", f"--pid-file={d}/munged.pid",
                f"--log-file={d}/munged.log", f"--seed-file={d}/munge.seed",
                f"--key-file={MUNGE_KEY}", "--force"], env, d / "munged.log")
        _start(["slurmctld", "-c", "-f", str(conf)], env, d / "slurmctld.log")
        for n in nodes:
            _start(["slurmd", "-N", n, "-f", str(conf)], env, d / f"slurmd-{n}.log")
        cluster = PairsCluster(conf, nodes[0], nodes[1:], env)
        cluster.wait_for("every node idle", lambda: all(
            cluster.state(n).startswith("IDLE") for n in nodes), START_LIMIT_S)
        yield cluster
    finally:
        for n in nodes:
            _stop(d / f"slurmd-{n}.pid")
        for name in ("slurmctld", "munged"):
            _stop(d / f"{name}.pid")
