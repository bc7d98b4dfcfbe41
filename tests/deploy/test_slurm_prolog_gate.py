"""A real job (`srun`, `sbatch`) through the prolog/epilog pair on a real Slurm
(slurm_cluster.py), with the prolog's gate on: a healthy node runs the job and both snapshots
reach the server; a node whose GPU is cut off is drained by the gate with peerwatch's reason
and the job does not start there; a job submitted one report after its GPU went missing is
refused at once (no debounce), also while the breaker is open, drained with peerwatch's
reason and action, the job's AdminComment saying why, the batch job requeued
(`SchedulerParameters=nohold_on_prolog_fail`); with the server unreachable the job runs."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from bench.helpers.serve import free_port
from peerwatch.app.drain.client import DrainClient
from peerwatch.app.drain.facts import Decision, Do
from peerwatch.probes.sim.faults import GpuLost
from tests.deploy.slurm_cluster import ONE_CLUSTER_AT_A_TIME, Cluster, site_hook, slurm_cluster
from tests.deploy.test_slurm_drain import ACT, ADMIN, CUT, PROBE, drain_server, report

pytestmark = ONE_CLUSTER_AT_A_TIME

ROOT = Path(__file__).resolve().parents[2]
SLURM = ROOT / "deploy" / "slurm"


def _hook(d: Path, which: str) -> str:
    return site_hook(d, which, f"PEERWATCH_TOKEN_FILE={d}/probe-token "
                     f"PEERWATCH_SNAPSHOT_SPOOL={d}/spool-snapshots "
                     "PEERWATCH_FABRIC=simulated:hgx8 PEERWATCH_HOSTNAME=$SLURMD_NODENAME "
                     f"PEERWATCH_GATE=1 PEERWATCH_GATE_TOKEN={ADMIN}",
                     f"exec {SLURM}/peerwatch-{which}.sh >>{d}/{which}.out 2>&1")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    d = tmp_path_factory.mktemp("slurm-gate")
    (d / "probe-token").write_text(PROBE)
    (d / "policy.yaml").write_text(ACT)
    (d / "server-url").write_text("http://127.0.0.1:1")
    with slurm_cluster(d, hooks={"Prolog": _hook(d, "prolog"),
                                 "Epilog": _hook(d, "epilog"),
                                 "SchedulerParameters": "nohold_on_prolog_fail"}) as c:
        yield c


@pytest.fixture
def server(tmp_path: Path, cluster: Cluster) -> Iterator[str]:
    cluster.undrain_all()
    policy = cluster.conf.parent / "policy.yaml"
    policy.write_text(ACT)
    with drain_server(tmp_path) as url:
        (cluster.conf.parent / "server-url").write_text(url)
        yield url
    policy.write_text(ACT)


def job_field(cluster: Cluster, job: str, name: str) -> str:
    """One field of `scontrol show job --oneliner` (a value may hold spaces: it runs up to
    the next ` Key=`)."""
    line = cluster.scontrol("show", "job", job, "--oneliner").strip()
    found = re.search(rf"(?:^| ){name}=(.*?)(?= [A-Z][A-Za-z/:]*=|$)", line)
    return found.group(1) if found else ""


def refused_batch_job(cluster: Cluster, tmp_path: Path) -> str:
    """An sbatch job on the real node, once the gate refused it: its id."""
    done = subprocess.run(["sbatch", "-w", cluster.node, "-o", str(tmp_path / "job.out"),
                           "--wrap", "hostname"], env=cluster.env, capture_output=True,
                          text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    job = done.stdout.split()[-1]
    cluster.wait_for(f"job {job} refused by the prolog",
                     lambda: job_field(cluster, job, "Restarts") not in ("", "0"))
    return job


def assert_refused_with_peerwatchs_reason(cluster: Cluster, server: str, job: str) -> None:
    reason = cluster.reason(cluster.node)
    assert reason.startswith("peerwatch: GPUMissing: GPU3 is missing"), reason
    assert "; do: drain the host" in reason, reason
    cluster.wait_for("the job's AdminComment", lambda: job_field(cluster, job, "AdminComment"))
    comment = job_field(cluster, job, "AdminComment")
    assert comment.startswith(f"peerwatch: not started on {cluster.node}: GPUMissing"), comment
    cluster.wait_for(f"job {job} back in the queue",
                     lambda: job_field(cluster, job, "JobState") == "PENDING")
    assert "held" not in job_field(cluster, job, "Reason")  # requeued, not held
    [took] = [a for a in httpx.get(f"{server}/api/v1/actions").json()["actions"]
              if a["kind"] == "take_out"]
    assert took["details"]["by"] == "gate" and took["host"] == cluster.node
    subprocess.run(["scancel", job], env=cluster.env, timeout=60, check=False)


def srun(cluster: Cluster) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["srun", "-N1", "-w", cluster.node, "hostname"], env=cluster.env,
                          capture_output=True, text=True, timeout=180)


def test_a_healthy_node_runs_the_job_with_both_snapshots(cluster: Cluster,
                                                         server: str) -> None:
    report(server, cluster.node)
    done = srun(cluster)
    assert done.returncode == 0 and done.stdout.strip() == cluster.node, done.stderr
    cluster.wait_for("the epilog's snapshot", lambda: len(httpx.get(
        f"{server}/api/v1/hosts/{cluster.node}/snapshots").json()["snapshots"]) == 2)
    listed = httpx.get(f"{server}/api/v1/hosts/{cluster.node}/snapshots").json()["snapshots"]
    assert sorted(s["phase"] for s in listed) == ["epilog", "prolog"]
    assert "DRAIN" not in cluster.state(cluster.node)


def test_the_gate_takes_a_faulty_node_out_before_the_job_starts(cluster: Cluster,
                                                                server: str) -> None:
    report(server, cluster.node, CUT)
    done = srun(cluster)
    assert done.returncode != 0 and "prolog" in done.stderr.lower(), done.stderr
    assert "DRAIN" in cluster.state(cluster.node)
    assert cluster.reason(cluster.node).startswith("peerwatch: GPU5 down: all 18 NVLinks down")
    [took] = httpx.get(f"{server}/api/v1/actions").json()["actions"]
    assert (took["host"], took["kind"], took["mode"]) == (cluster.node, "take_out", "act")


def test_an_unreachable_server_never_blocks_the_job(cluster: Cluster) -> None:
    cluster.undrain_all()
    (cluster.conf.parent / "server-url").write_text(f"http://127.0.0.1:{free_port()}")
    done = srun(cluster)
    assert done.returncode == 0 and done.stdout.strip() == cluster.node, done.stderr
    assert "could not judge" in (cluster.conf.parent / "prolog.out").read_text()
    assert "DRAIN" not in cluster.state(cluster.node)


GONE = (GpuLost(gpu=3),)
NO_WAIT_POLICY = "mode: act\nsettle_after_boot: 0\n"  # the default 5 min debounce


def test_a_job_one_report_after_its_gpu_went_missing_is_refused(
        cluster: Cluster, server: str, tmp_path: Path) -> None:
    (cluster.conf.parent / "policy.yaml").write_text(NO_WAIT_POLICY)
    report(server, cluster.node)  # all 8 GPUs seen
    report(server, cluster.node, GONE)  # one report later GPU3 is gone
    job = refused_batch_job(cluster, tmp_path)
    assert_refused_with_peerwatchs_reason(cluster, server, job)


def test_the_gate_refuses_a_missing_gpu_while_the_breaker_is_open(
        cluster: Cluster, server: str, tmp_path: Path) -> None:
    (cluster.conf.parent / "policy.yaml").write_text(NO_WAIT_POLICY)
    client = DrainClient(server, ADMIN)
    client.report(Decision("", Do.TRIP_BREAKER, "tripped by the test"), "breaker_trip",
                  "slurm", "act", "test")
    client.close()
    report(server, cluster.node)
    report(server, cluster.node, GONE)
    job = refused_batch_job(cluster, tmp_path)
    assert_refused_with_peerwatchs_reason(cluster, server, job)
    assert httpx.get(f"{server}/api/v1/drain/breaker").json()["open"]
