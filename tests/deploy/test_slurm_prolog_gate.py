"""A real job (`srun`) through the prolog/epilog pair on a real Slurm (slurm_cluster.py),
with the prolog's gate on: a healthy node runs the job and both snapshots reach the server;
a node whose GPU is cut off is drained by the gate with peerwatch's reason and the job does
not start there; with the server unreachable the job runs (could not judge)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from bench.helpers.serve import free_port
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
                                 "Epilog": _hook(d, "epilog")}) as c:
        yield c


@pytest.fixture
def server(tmp_path: Path, cluster: Cluster) -> Iterator[str]:
    cluster.undrain_all()
    with drain_server(tmp_path) as url:
        (cluster.conf.parent / "server-url").write_text(url)
        yield url


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
