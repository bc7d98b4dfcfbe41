"""Cross-host pair tests through a real Slurm, end to end on this machine: six `slurmd`
nodes on two leaves, a real `peerwatch serve`, one `peerwatch probe --once` agent process
per node (simulated GPUs), and `peerwatch pairs` submitting the server's planned pairs with
sbatch into the scavenger partition. The ranks run as Slurm tasks on the nodes, meet through
the server with their own nodes' probe credentials and post the (simulated) transfer.

Shown for real: a pair job never runs on a node a real job holds (it waits, pending, and
runs once the node is idle), a real job preempts a running pair job, and a bad cable on one
node is found by triangulation (one NetworkHostPathSlow for that node, nothing else).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from bench.helpers.serve import serve_process
from peerwatch.app.runtime.credentials import Role, issue
from peerwatch.app.runtime.keyring import ensure_keys
from peerwatch.probes.sim.simnet import BadCable, leaf_spine, network_map, simnet_json
from tests.conftest import eventually
from tests.deploy.slurm_cluster import ONE_CLUSTER_AT_A_TIME
from tests.deploy.slurm_pairs_cluster import PairsCluster, pairs_cluster

pytestmark = ONE_CLUSTER_AT_A_TIME
NET = leaf_spine(2, 3, prefix="pn")
NODES = tuple(sorted(NET.hosts))
ADMIN = "pairs-admin-secret"
LIMIT_S = 600.0  # a pair job's two ranks start, meet and post: slow beside a loaded suite
BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PairsCluster]:
    with pairs_cluster(tmp_path_factory.mktemp("slurm-pairs"), NODES) as c:
        yield c


@pytest.fixture
def fleet(tmp_path: Path, cluster: PairsCluster) -> Iterator[tuple[str, Path]]:
    """The server, its map, a probe credential file per node and each node's agent run."""
    data, creds = tmp_path / "data", tmp_path / "creds"
    data.mkdir()
    creds.mkdir(mode=0o700)
    secret = data / "secret"
    env = {"PEERWATCH_ADMIN_TOKEN": ADMIN, "PEERWATCH_SECRET_FILE": str(secret),
           "PEERWATCH_NETWORK_RETEST_S": "3600"}
    with serve_process(f"sqlite:///{tmp_path / 'pw.db'}", data, env) as url:
        keys = ensure_keys(secret)
        for node in NODES:
            path = creds / f"{node}.token"
            path.write_text(issue(keys, Role.PROBE, node) + "\n")
            path.chmod(0o600)
        (creds / "drain.token").write_text(issue(keys, Role.DRAIN, "pairs-controller") + "\n")
        (creds / "drain.token").chmod(0o600)
        r = httpx.put(f"{url}/api/v1/network/hosts", json={"hosts": network_map(NET)},
                      headers={"Authorization": f"Bearer {ADMIN}"}, timeout=60)
        assert r.status_code == 200, r.text
        for node in NODES:
            _agent(url, node, creds / f"{node}.token", tmp_path)
        assert eventually(lambda: _schedulable(url) == set(NODES), LIMIT_S)
        yield url, creds


def _agent(url: str, node: str, token: Path, tmp: Path) -> None:
    done = subprocess.run(
        [str(BIN / "peerwatch"), "probe", "--once", "--server", url, "--token-file",
         str(token), "--fabric", "simulated:h200x2", "--hostname", node,
         "--spool-dir", str(tmp / f"spool-{node}")],
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


def _schedulable(url: str) -> set[str]:
    hosts = httpx.get(f"{url}/api/v1/scheduler/hosts", timeout=60).json()["hosts"]
    return {h["host"] for h in hosts}


def _rank_wrapper(tmp: Path, creds: Path, simnet: Path) -> str:
    """What a site puts in --rank-command: its environment, then the rank."""
    script = tmp / "rank.sh"
    script.write_text(f"""#!/bin/sh
export PATH={BIN}:/usr/sbin:/usr/bin:/sbin:/bin
exec {BIN}/peerwatch pairs rank --token-file '{creds}/{{node}}.token' --simnet {simnet} "$@"
""")
    script.chmod(0o755)
    return str(script)


def _round(cluster: PairsCluster, url: str, creds: Path, wrapper: str) -> dict:
    done = subprocess.run(
        [str(BIN / "peerwatch"), "pairs", "--once", "--server", url, "--token-file",
         str(creds / "drain.token"), "--scheduler", "slurm", "--partition", "scavenger",
         "--rank-command", wrapper, "--max-pairs", "8",
         "--job-output", str(Path(wrapper).parent / "pair-%j.out")],
        env=cluster.env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "drain.token" not in done.stdout  # nothing secret said
    return json.loads(done.stdout.strip().splitlines()[-1])


def _rank_words(tmp: Path) -> str:
    """What the pair jobs' ranks said (`--job-output`): why a job ended without a result."""
    return "\n".join(f"{p.name}: {p.read_text()[-2000:]}" for p in sorted(tmp.glob("pair-*.out"))
                     if p.read_text().strip())


def _jobs(url: str, state: str | None = None) -> list[dict]:
    params = {"state": state} if state else {}
    return httpx.get(f"{url}/api/v1/network/jobs", params=params, timeout=60).json()["jobs"]


def _settled(url: str) -> bool:
    return not _jobs(url, "submitted") and not _jobs(url, "running")


# up to ten rounds of pair jobs through a real Slurm, each waited on with LIMIT_S: the suite's
# 300 s default would cut a loaded run short of its own limits
@pytest.mark.timeout(4 * LIMIT_S)
def test_pair_jobs_use_idle_nodes_only_and_find_a_bad_cable(
        cluster: PairsCluster, fleet: tuple[str, Path], tmp_path: Path) -> None:
    url, creds = fleet
    NET.faults = [BadCable("pn-1")]
    simnet = tmp_path / "simnet.json"
    simnet.write_text(json.dumps(simnet_json(NET)))
    wrapper = _rank_wrapper(tmp_path, creds, simnet)
    # a real job holds pn-5: no pair job may run there while it does
    real = subprocess.run(["sbatch", "--parsable", "-p", "main", "-w", "pn-5",
                           "--output=/dev/null", "--wrap=sleep 600"], env=cluster.env,
                          capture_output=True, text=True, timeout=60).stdout.strip()
    cluster.wait_for("the real job running", lambda: cluster.squeue().get(real) == "RUNNING")
    first = _round(cluster, url, creds, wrapper)
    assert first["submitted"] and not first["failed"]
    on_pn5 = [j for j in _jobs(url) if "pn-5" in (j["host"], j["peer_host"])]
    others = [j for j in _jobs(url) if j not in on_pn5]
    assert on_pn5, "the planner covers pn-5's leaf ring"
    assert eventually(lambda: all(j["state"] == "done" for j in _jobs(url) if j["id"] in
                                  {o["id"] for o in others}), LIMIT_S), _rank_words(tmp_path)
    queue = cluster.squeue()
    for j in on_pn5:  # still waiting for the node: never ran beside the real job
        assert queue.get(j["scheduler_job"]) == "PENDING", (j, queue)
        assert httpx.get(f"{url}/api/v1/network/jobs/{j['id']}").json()["ranks"] == {}
    subprocess.run(["scancel", real], env=cluster.env, check=True, timeout=60)
    assert eventually(lambda: _settled(url), LIMIT_S), (_jobs(url), _rank_words(tmp_path))
    assert {j["state"] for j in _jobs(url)} == {"done"}
    # more rounds: coverage, then the suspects until triangulation has told them apart
    for _ in range(8):
        if not _round(cluster, url, creds, wrapper)["submitted"]:
            break
        assert eventually(lambda: _settled(url), LIMIT_S), (
            _jobs(url, "submitted") + _jobs(url, "running"), cluster.squeue(),
            _rank_words(tmp_path))
    assert {j["state"] for j in _jobs(url)} == {"done"}  # every pair job's ranks met
    body = httpx.get(f"{url}/api/v1/network/pairs", timeout=60).json()
    assert [(f["kind"], f["subject"]) for f in body["faults"]] == [("host", "pn-1")]

    def network_alerts() -> list[tuple[str, str | None]]:
        alerts = httpx.get(f"{url}/api/v1/alerts", timeout=60).json()["alerts"]
        return [(a["labels"]["alertname"], a["labels"].get("host")) for a in alerts
                if a["labels"]["alertname"].startswith("Network")]

    # each result's post stores it, then moves the network alerts: a job reads done a
    # moment before its evaluation has committed
    assert eventually(lambda: network_alerts() == [("NetworkHostPathSlow", "pn-1")], LIMIT_S), (
        network_alerts())
    chosen = httpx.get(f"{url}/api/v1/scheduler/nodes", params={"count": 3},
                       timeout=60).json()
    assert [n["host"] for n in chosen["nodes"]] == ["pn-4", "pn-5", "pn-6"]


def test_a_real_job_preempts_a_running_pair_job(
        cluster: PairsCluster, fleet: tuple[str, Path], tmp_path: Path) -> None:
    url, creds = fleet
    # a rank that never finishes: rank 1 waits for a result rank 0 never sends
    hang = tmp_path / "hang.sh"
    hang.write_text("#!/bin/sh\nexec sleep 600\n")
    hang.chmod(0o755)
    first = _round(cluster, url, creds, str(hang))
    [(job_id, sched), *_] = first["submitted"]
    cluster.wait_for("the pair job running", lambda: cluster.squeue().get(sched) == "RUNNING",
                     LIMIT_S)
    node = next(j for j in _jobs(url) if j["id"] == job_id)["host"]
    real = subprocess.run(["sbatch", "--parsable", "-p", "main", "-w", node,
                           "--output=/dev/null", "--wrap=sleep 5"], env=cluster.env,
                          capture_output=True, text=True, timeout=60).stdout.strip()
    cluster.wait_for("the real job running", lambda: cluster.squeue().get(real) in
                     ("RUNNING", None), LIMIT_S)
    assert sched not in cluster.squeue() or cluster.squeue()[sched] != "RUNNING"
    cluster.wait_for("the pair job gone", lambda: sched not in cluster.squeue(), LIMIT_S)
    closed = _round(cluster, url, creds, str(hang))["closed"]
    assert job_id in closed
    assert next(j for j in _jobs(url) if j["id"] == job_id)["state"] == "cancelled"
    for j in _jobs(url, "submitted"):
        subprocess.run(["scancel", j["scheduler_job"]], env=cluster.env, timeout=60)
