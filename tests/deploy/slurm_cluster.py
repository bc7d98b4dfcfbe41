"""A real one-machine Slurm cluster for the tests: `munged`, `slurmctld` and `slurmd` from
Debian's slurm-wlm, started from a private slurm.conf (../shared/REFERENCE.md §8).

Everything is private to the test's directory: munge's socket (`AuthInfo=socket=`), state,
spool, pid and log files, and free ports, so it never meets another Slurm or munge on the
machine. One node is real (`NodeName=<hostname -s>`, served by the slurmd started here); the
extra nodes have `NodeAddr=127.0.0.1` and no slurmd of their own. Waits are on conditions
with generous limits: slurmctld's start is slow on a loaded machine.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from bench.helpers.serve import free_port
from tests.conftest import require

PROGRAMS = ("munged", "slurmctld", "slurmd", "scontrol", "srun", "sinfo")
MUNGE_KEY = Path("/etc/munge/munge.key")
START_LIMIT_S = 180.0
# Each test file's cluster is private, but slurmd registers this machine's own hostname in
# each: under `make test`'s parallel workers the Slurm files run one after another, on one
# worker (tests/parallel.py), so two clusters never claim the node at once.
ONE_CLUSTER_AT_A_TIME = pytest.mark.xdist_group("slurm")


@dataclass
class Cluster:
    conf: Path
    node: str  # the real node (its slurmd runs here)
    extra: tuple[str, ...]
    env: dict[str, str]  # SLURM_CONF for scontrol/srun/peerwatch drain

    def scontrol(self, *args: str, check: bool = True) -> str:
        done = subprocess.run(["scontrol", *args], env=self.env, capture_output=True,
                              text=True, timeout=60)
        if check and done.returncode != 0:
            raise AssertionError(f"scontrol {' '.join(args)}: {done.stderr}")
        return done.stdout

    def show(self, node: str) -> str:
        return self.scontrol("show", "node", node, "--oneliner")

    def state(self, node: str) -> str:
        return next(f for f in self.show(node).split() if f.startswith("State="))[6:]

    def reason(self, node: str) -> str:
        line = self.show(node)
        return line.split(" Reason=", 1)[1].rsplit(" [", 1)[0] if " Reason=" in line else ""

    def wait_for(self, what: str, check, limit_s: float = 120.0) -> None:
        deadline = time.monotonic() + limit_s
        while not check():
            assert time.monotonic() < deadline, f"Slurm: {what} within {limit_s:g} s"
            time.sleep(0.5)

    def undrain_all(self) -> None:
        """Back to a clean start: every node resumed (the extra nodes may refuse; fine)."""
        for node in (self.node, *self.extra):
            if "DRAIN" in self.state(node):
                self.scontrol("update", f"nodename={node}", "state=resume", check=False)
        self.wait_for(f"{self.node} idle", lambda: "DRAIN" not in self.state(self.node))


def require_slurm() -> None:
    missing = [p for p in PROGRAMS if shutil.which(p) is None]
    require(not missing, f"Slurm and munge ({', '.join(missing)}: apt-get install slurmctld "
                         "slurmd slurm-client munge)")
    require(MUNGE_KEY.exists(), f"munge's key {MUNGE_KEY}")
    require(os.geteuid() == 0, "root (SlurmUser=root in the test cluster)")


def _conf(d: Path, node: str, extra: tuple[str, ...], hooks: dict[str, str],
          gpus: int = 0) -> str:
    gres = f"CPUs=2 Gres=gpu:{gpus}" if gpus else "CPUs=1"  # 2: two jobs side by side
    lines = [
        "ClusterName=pwtest", f"SlurmctldHost={node}(127.0.0.1)", "SlurmUser=root",
        "SlurmdUser=root", "AuthType=auth/munge", f"AuthInfo=socket={d}/munge.sock",
        "CredType=cred/munge", "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none",
        "JobAcctGatherType=jobacct_gather/none", "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core", "MpiDefault=none", "ReturnToService=2",
        f"SlurmctldPort={free_port()}", f"SlurmdPort={free_port()}",
        f"StateSaveLocation={d}/state", f"SlurmdSpoolDir={d}/spool",
        f"SlurmctldPidFile={d}/slurmctld.pid", f"SlurmdPidFile={d}/slurmd.pid",
        f"SlurmctldLogFile={d}/slurmctld.log", f"SlurmdLogFile={d}/slurmd.log",
        *(f"{k}={v}" for k, v in hooks.items()),
        *(["GresTypes=gpu"] if gpus else []),
        f"NodeName={node} {gres} State=UNKNOWN",
        *([f"NodeName={','.join(extra)} NodeAddr=127.0.0.1 CPUs=1 State=UNKNOWN"] if extra
          else []),
        "PartitionName=main Nodes=ALL Default=YES MaxTime=INFINITE State=UP",
    ]
    return "\n".join(lines) + "\n"


def _gres(d: Path, node: str, gpus: int) -> None:
    (d / "dev").mkdir()
    for i in range(gpus):
        os.mknod(d / "dev" / f"nvidia{i}", 0o600 | stat.S_IFCHR, os.makedev(195, i))
    (d / "gres.conf").write_text(f"NodeName={node} Name=gpu File={d}/dev/nvidia[0-{gpus - 1}]\n")


def _stop(pid_file: Path) -> None:
    try:
        pid = int(pid_file.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)
    os.kill(pid, signal.SIGKILL)


def _start(argv: list[str], env: dict[str, str], log: Path) -> None:
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        tail = log.read_text()[-2000:] if log.exists() else ""
        raise RuntimeError(f"{argv[0]} did not start: {done.stderr}\n{tail}")


@contextmanager
def slurm_cluster(d: Path, extra: tuple[str, ...] = ("gpu-b", "gpu-c", "gpu-d"),
                  hooks: dict[str, str] | None = None, gpus: int = 0) -> Iterator[Cluster]:
    """munged + slurmctld + slurmd on private paths; all three stopped on exit. With `gpus`,
    the real node has that many GPUs as a GRES (gres.conf beside slurm.conf, one stand-in
    character device per GPU under `d`/dev: Slurm checks the kind, nothing opens it), so
    jobs get SLURM_JOB_GPUS/CUDA_VISIBLE_DEVICES as on a GPU node."""
    require_slurm()
    (d / "state").mkdir(parents=True)
    (d / "spool").mkdir()
    node = socket.gethostname().split(".")[0]
    conf = d / "slurm.conf"
    conf.write_text(_conf(d, node, extra, hooks or {}, gpus))
    if gpus:
        _gres(d, node, gpus)
    env = {**os.environ, "SLURM_CONF": str(conf)}
    try:
        _start(["munged", f"--socket={d}/munge.sock", f"--pid-file={d}/munged.pid",
                f"--log-file={d}/munged.log", f"--seed-file={d}/munge.seed",
                f"--key-file={MUNGE_KEY}", "--force"], env, d / "munged.log")
        _start(["slurmctld", "-c", "-f", str(conf)], env, d / "slurmctld.log")
        _start(["slurmd", "-f", str(conf)], env, d / "slurmd.log")
        cluster = Cluster(conf, node, extra, env)
        cluster.wait_for(f"{node} up", lambda: _idle(cluster), START_LIMIT_S)
        yield cluster
    finally:
        for name in ("slurmd", "slurmctld", "munged"):
            _stop(d / f"{name}.pid")


def _idle(cluster: Cluster) -> bool:
    done = subprocess.run(["sinfo", "-h", "-n", cluster.node, "-o", "%T"], env=cluster.env,
                          capture_output=True, text=True, timeout=60)
    return done.returncode == 0 and done.stdout.strip().startswith("idle")


def site_hook(d: Path, name: str, exports: str, body: str) -> str:
    """A site's wrapper around a shipped hook, as slurm.conf names it: slurmd runs hooks
    with a bare environment, so the wrapper sets PATH, SLURM_CONF, the server's URL (read
    from `d`/server-url each run, so a test can point it elsewhere), the peerwatch command
    and `exports`, then runs `body`."""
    bin_dir = Path(sys.executable).parent
    script = d / f"{name}.sh"
    script.write_text(f"""#!/bin/sh
export PATH={bin_dir}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export SLURM_CONF={d}/slurm.conf PEERWATCH_URL=$(cat {d}/server-url)
export PEERWATCH_BIN={bin_dir}/peerwatch PEERWATCH_DRAIN_POLICY={d}/policy.yaml
export {exports}
{body}
""")
    script.chmod(0o755)
    return str(script)
