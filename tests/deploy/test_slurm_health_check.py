"""`deploy/slurm/peerwatch-drain-health.sh` as slurmd runs it: `HealthCheckProgram` in the
test cluster's slurm.conf (slurm_cluster.py), every few seconds. A GPU cut off on the node
gets it drained with peerwatch's reason by slurmd's own health check; once healthy it is
resumed the same way; each run stays well within Slurm's 60 s."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from tests.deploy.slurm_cluster import ONE_CLUSTER_AT_A_TIME, Cluster, site_hook, slurm_cluster
from tests.deploy.test_slurm_drain import ACT, ADMIN, CUT, drain_server, report

pytestmark = ONE_CLUSTER_AT_A_TIME

ROOT = Path(__file__).resolve().parents[2]
INTERVAL_S = 5
# Each health-check round starts a Python CLI; beside two CPU burners and make test's other
# workers one round has taken tens of seconds, and a return needs two rounds (recovering,
# then return): wait on the node's state with a limit far past that, never a tight one.
STATE_LIMIT_S = 600
REPORT_EVERY_S = 30  # the probe's inventory interval


def _hook(d: Path) -> str:
    return site_hook(d, "health", f"PEERWATCH_GATE_TOKEN={ADMIN}", f"""start=$(date +%s)
{ROOT}/deploy/slurm/peerwatch-drain-health.sh >>{d}/health.out 2>&1
echo "exit $? after $(( $(date +%s) - start )) s" >>{d}/health.out""")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    d = tmp_path_factory.mktemp("slurm-health")
    (d / "policy.yaml").write_text(ACT)
    (d / "server-url").write_text("http://127.0.0.1:1")
    hooks = {"HealthCheckProgram": _hook(d), "HealthCheckInterval": str(INTERVAL_S),
             "HealthCheckNodeState": "ANY"}
    # no extra nodes: slurmctld asks every node's address for its health check, and extra
    # nodes share this slurmd's, so each would start one more round every interval (four
    # a 5 s interval; in a loaded CI run with them, every round ran past the hook's 50 s)
    with slurm_cluster(d, extra=(), hooks=hooks) as c:
        yield c


def _kinds(url: str) -> list[str]:
    return [a["kind"] for a in httpx.get(f"{url}/api/v1/actions").json()["actions"]]


def _resumed(cluster: Cluster, url: str, node: str) -> Callable[[], bool]:
    """Whether the node is back and the return recorded, the healthy host reporting on as its
    probe would meanwhile: a host unheard for the server's stale_after_s (90 s) is not proven
    whole, and two slow health-check rounds under load can take longer than that. The round
    resumes the node first and records the return after (only what was done is recorded), so
    the node alone can be seen back a moment before the record exists."""
    last = [-REPORT_EVERY_S]

    def check() -> bool:
        if time.monotonic() - last[0] >= REPORT_EVERY_S:
            report(url, node)
            last[0] = time.monotonic()
        return "DRAIN" not in cluster.state(node) and "return" in _kinds(url)
    return check


@contextmanager
def _rounds_told(d: Path) -> Iterator[None]:
    """A wait that fails says what the health-check rounds said (how long each took)."""
    try:
        yield
    except AssertionError as exc:
        said = (d / "health.out").read_text().splitlines()
        raise AssertionError(f"{exc}\n{len(said)} lines from the rounds, the last:\n"
                             + "\n".join(said[-30:])) from None


@pytest.mark.timeout(3 * STATE_LIMIT_S)
def test_slurmds_health_check_drains_and_resumes_the_node(cluster: Cluster,
                                                          tmp_path: Path) -> None:
    node, d = cluster.node, cluster.conf.parent
    with drain_server(tmp_path) as url:
        report(url, node, CUT)
        (d / "server-url").write_text(url)
        with _rounds_told(d):
            cluster.wait_for("the health check drains the node", lambda: cluster.reason(node)
                             .startswith("peerwatch: GPU5 down: all 18 NVLinks down"),
                             STATE_LIMIT_S)
            cluster.wait_for("the health check resumes the node", _resumed(cluster, url, node),
                             STATE_LIMIT_S)
        kinds = _kinds(url)
    # overlapping runs (each takes seconds, one starts every 5 s) never fail a resume
    assert kinds[-1] == "take_out" and "return" in kinds and "failed" not in kinds, kinds
    runs = [line for line in (d / "health.out").read_text().splitlines()
            if line.startswith("exit ")]
    assert runs and all(line.startswith("exit 0 after ") for line in runs), runs
    assert max(int(line.split()[3]) for line in runs) < 60
