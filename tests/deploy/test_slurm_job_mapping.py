"""The shipped prolog/epilog write and remove the GPU job mapping under a real Slurm
(slurm_cluster.py, the node given 4 GPUs as a GRES): a job's GPUs as slurmd hands them to the
hooks (SLURM_JOB_GPUS), two jobs side by side on different GPUs, the agent reading the files
while they run (and `peerwatch probe` sending them to a server whose job page lists them), and
nothing left once they end. Then the script alone, as slurmd runs it,
for two jobs sharing one GPU and for GPUs it cannot map."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from bench.helpers.serve import serve_process
from peerwatch.probes.agent.job_mapping import boot_time, read_job_mapping
from tests.conftest import eventually
from tests.deploy.slurm_cluster import ONE_CLUSTER_AT_A_TIME, Cluster, site_hook, slurm_cluster

pytestmark = ONE_CLUSTER_AT_A_TIME

ROOT = Path(__file__).resolve().parents[2]
SLURM = ROOT / "deploy" / "slurm"
MAPPING = SLURM / "peerwatch-job-mapping.sh"
TOKEN = "slurm-map-token"


def _hook(d: Path, which: str) -> str:
    # The snapshot half is tested elsewhere (test_slurm_prolog_gate.py): here it is a
    # command that fails at once, which the hooks must survive anyway.
    return site_hook(d, which, f"PEERWATCH_JOB_MAPPING_DIR={d}/map PEERWATCH_BIN=/bin/false",
                     f"exec {SLURM}/peerwatch-{which}.sh >>{d}/{which}.out 2>&1")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    d = tmp_path_factory.mktemp("slurm-map")
    (d / "server-url").write_text("http://127.0.0.1:1")
    with slurm_cluster(d, hooks={"Prolog": _hook(d, "prolog"), "Epilog": _hook(d, "epilog")},
                       gpus=4) as c:
        yield c


def mapping(cluster: Cluster) -> dict[int, list[str]]:
    found = read_job_mapping(cluster.conf.parent / "map", set(range(4)), boot_time())
    assert found.warnings == [], found.warnings
    out: dict[int, list[str]] = {}
    for j in found.jobs:
        out.setdefault(j.gpu, []).append(j.job)
    return out


def test_two_jobs_side_by_side_each_map_their_own_gpus(cluster: Cluster) -> None:
    holder = subprocess.Popen(
        ["srun", "-N1", "-n1", "-w", cluster.node, "--gres=gpu:1", "sh", "-c",
         "echo $SLURM_JOB_ID; sleep 600"], env=cluster.env, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None
        first = holder.stdout.readline().strip()
        assert first.isdigit(), first
        cluster.wait_for("the first job mapped", lambda: mapping(cluster) == {0: [first]})
        done = subprocess.run(
            ["srun", "-N1", "-n1", "-w", cluster.node, "--gres=gpu:2", "sh", "-c",
             f"echo $SLURM_JOB_ID; cat {cluster.conf.parent}/map/1 {cluster.conf.parent}/map/2"],
            env=cluster.env, capture_output=True, text=True, timeout=180)
        assert done.returncode == 0, done.stderr
        second, *seen = done.stdout.split()
        assert seen == [second, second]  # GPUs 1 and 2 named the second job while it ran
        cluster.wait_for("the second job unmapped", lambda: mapping(cluster) == {0: [first]})
    finally:
        holder.terminate()  # srun passes the signal on; the job ends, its epilog runs
        holder.wait(timeout=120)
    cluster.wait_for("the first job unmapped", lambda: mapping(cluster) == {})
    assert not any(p.name != ".lock" for p in (cluster.conf.parent / "map").iterdir())


def test_the_agent_reports_the_job_slurm_mapped_and_its_page_lists_it(
        cluster: Cluster, tmp_path: Path) -> None:
    """End to end: the prolog maps a real job's GPUs, `peerwatch probe --once` (a simulated
    2-GPU board named as the node) reads the files, the server's job page lists the GPUs."""
    mapped = cluster.conf.parent / "map"
    with serve_process(f"sqlite:///{tmp_path / 'pw.db'}", tmp_path / "data",
                       {"PEERWATCH_PROBE_TOKENS": TOKEN}) as url:
        holder = subprocess.Popen(
            ["srun", "-N1", "-n1", "-w", cluster.node, "--gres=gpu:2", "sh", "-c",
             "echo $SLURM_JOB_ID; sleep 600"], env=cluster.env, stdout=subprocess.PIPE,
            text=True)
        try:
            assert holder.stdout is not None
            job = holder.stdout.readline().strip()
            cluster.wait_for("the job mapped", lambda: mapping(cluster) == {0: [job], 1: [job]})
            probe = subprocess.run(
                ["peerwatch", "probe", "--once", "--server", url,
                 "--fabric", "simulated:h200x2", "--hostname", cluster.node,
                 "--spool-dir", str(tmp_path / "spool"), "--job-mapping-dir", str(mapped),
                 "--kubelet-socket", ""], capture_output=True, text=True, timeout=300,
                env={**os.environ, "PEERWATCH_PROBE_TOKEN": TOKEN,
                     "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"})
            assert probe.returncode == 0, probe.stderr
            # serve answers once the report is stored whole, its rows (the job's GPUs) after
            page = eventually(lambda: _held(url, job))
        finally:
            holder.terminate()
            holder.wait(timeout=120)
    assert page is not None, f"job {job}'s page never listed a GPU"
    node = cluster.node.lower()
    assert [(h["host"], h["gpu"], h["source"]) for h in page["held"]] == [
        (node, 0, "mapping_dir"), (node, 1, "mapping_dir")]
    cluster.wait_for("the job unmapped", lambda: mapping(cluster) == {})


def _held(url: str, job: str) -> dict[str, Any] | None:
    """The job's page once it lists the GPUs the job held (None before)."""
    answer = httpx.get(f"{url}/api/v1/jobs/{job}", timeout=30)
    page = answer.json() if answer.status_code == 200 else None
    return page if page and page.get("held") else None


def _run(tmp_path: Path, action: str, job: str, **env: str) -> str:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "CUDA_"))}
    done = subprocess.run([str(MAPPING), action], capture_output=True, text=True, timeout=30,
                          env={**base, "SLURM_JOB_ID": job,
                               "PEERWATCH_JOB_MAPPING_DIR": str(tmp_path / "map"), **env})
    assert done.returncode == 0
    return done.stderr


def test_two_jobs_sharing_a_gpu_each_keep_their_line(tmp_path: Path) -> None:
    _run(tmp_path, "add", "500", SLURM_JOB_GPUS="3")
    _run(tmp_path, "add", "501", SLURM_JOB_GPUS="3,5")
    _run(tmp_path, "add", "501", SLURM_JOB_GPUS="3,5")  # a prolog run twice: one line
    assert (tmp_path / "map" / "3").read_text() == "500\n501\n"
    _run(tmp_path, "remove", "500", SLURM_JOB_GPUS="3")
    assert (tmp_path / "map" / "3").read_text() == "501\n"
    _run(tmp_path, "remove", "501", SLURM_JOB_GPUS="3,5")
    assert sorted(p.name for p in (tmp_path / "map").iterdir()) == [".lock"]


def test_the_fallbacks_and_what_cannot_be_mapped(tmp_path: Path) -> None:
    _run(tmp_path, "add", "600", CUDA_VISIBLE_DEVICES="1")  # no SLURM_JOB_GPUS: CUDA's
    assert (tmp_path / "map" / "1").read_text() == "600\n"
    err = _run(tmp_path, "add", "601", SLURM_JOB_GPUS="GPU-1234abcd,2")
    assert "GPU 'GPU-1234abcd' of job 601 is not an index; not mapped" in err
    assert (tmp_path / "map" / "2").read_text() == "601\n"
    assert _run(tmp_path, "add", "602") == ""  # a job without GPUs: nothing to map


@pytest.mark.parametrize("job", ["700\n701", "70 1", "$(reboot)", "7-1", "-x"])
def test_a_job_id_that_is_not_a_number_maps_nothing(job: str, tmp_path: Path) -> None:
    """Slurm's job ids are numbers: anything else would be more than one line of a GPU's
    file (another job's line removed with it), so it is left out, said in one line."""
    _run(tmp_path, "add", "800", SLURM_JOB_GPUS="4")
    err = _run(tmp_path, "add", job, SLURM_JOB_GPUS="4")
    assert err.endswith("is not a number; not mapped\n") and err.count("\n") == 1, err
    _run(tmp_path, "remove", job, SLURM_JOB_GPUS="4")
    assert (tmp_path / "map" / "4").read_text() == "800\n"
