"""`peerwatch drain` against a real Slurm (slurmctld + slurmd + munge, tests/deploy/
slurm_cluster.py) and a real `peerwatch serve` fed simulated probe reports.

A GPU cut off on the real node drains it with peerwatch's reason and the verdict's action,
and its recovery resumes it; a node an operator drained is left alone, faulty or healthy;
the breaker trips at its limit (one node out, the next held, DrainBreakerOpen firing) and a
person resets it; the HealthCheckProgram mode answers well within Slurm's 60 s.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from bench.helpers.serve import serve_process
from peerwatch.app.runtime.credentials import Role, issue
from peerwatch.app.runtime.keyring import SECRET_FILE_NAME, ensure_keys
from peerwatch.probes.report import TestName
from peerwatch.probes.sim.faults import LinksDown
from peerwatch.probes.sim.simulated import SimulatedFabric
from peerwatch.probes.sweep import SweepOptions, build_report
from tests.conftest import eventually
from tests.deploy.slurm_cluster import ONE_CLUSTER_AT_A_TIME, Cluster, slurm_cluster

pytestmark = ONE_CLUSTER_AT_A_TIME

ADMIN = "drain-admin-token"
PROBE = "drain-probe-token"
ACT = "mode: act\ndebounce: 0\nsettle_after_boot: 0\nreturn_after: 0\n"
CUT = (LinksDown(gpu=5, count=18),)
DRAIN_NAME = "slurm-head"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with slurm_cluster(tmp_path_factory.mktemp("slurm")) as c:
        yield c


# The credential secret every drain server of this process uses, as a fleet's server keeps
# its secret file while a database is wiped or replaced.
SECRET = Path(tempfile.mkdtemp(prefix="peerwatch-drain-secret-")) / SECRET_FILE_NAME
atexit.register(shutil.rmtree, SECRET.parent, True)


@contextmanager
def drain_server(tmp_path: Path) -> Iterator[str]:
    """A real `peerwatch serve` on a fresh SQLite database, with probe and admin tokens."""
    env = {"PEERWATCH_PROBE_TOKENS": PROBE, "PEERWATCH_ADMIN_TOKEN": ADMIN,
           "PEERWATCH_SECRET_FILE": str(SECRET)}
    with serve_process(f"sqlite:///{tmp_path / 'pw.db'}", tmp_path / "data", env) as url:
        yield url


@pytest.fixture
def server(tmp_path: Path, cluster: Cluster) -> Iterator[str]:
    cluster.undrain_all()
    with drain_server(tmp_path) as url:
        yield url


def report(url: str, host: str, faults: tuple = ()) -> None:
    fab = SimulatedFabric("hgx8", seed=3, faults=faults, hostname=host)
    body = build_report(fab, options=SweepOptions(tests=(TestName.CE_WRITE,)))
    posted = datetime.now(UTC)
    r = httpx.post(f"{url}/api/v1/reports", content=body.model_dump_json(), timeout=60,
                   headers={"Authorization": f"Bearer {PROBE}",
                            "Content-Type": "application/json"})
    assert r.status_code == 201, r.text
    # the server judges after answering (its judge queue): wait for this report's verdict
    assert eventually(lambda: _judged_since(url, host, posted)), f"{host} never judged"


def _judged_since(url: str, host: str, at: datetime) -> bool:
    r = httpx.get(f"{url}/api/v1/hosts/{host}/health", timeout=60)
    judged = r.json().get("judged_at") if r.status_code == 200 else None
    return judged is not None and datetime.fromisoformat(judged) >= at


def drain(cluster: Cluster, url: str, tmp_path: Path, policy: str, *extra: str
          ) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "policy.yaml"
    path.write_text(policy)
    done = subprocess.run([sys.executable, "-m", "peerwatch.app.cli", "drain", "--once",
                           "--server", url,
                           "--policy", str(path), *extra],
                          env={**cluster.env, **credentials(extra)},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def credentials(extra: tuple[str, ...]) -> dict[str, str]:
    """The controller's drain credential and, for one node's round, that node's gate
    credential, issued from the drain servers' secret."""
    keys = ensure_keys(SECRET)
    env = {"PEERWATCH_DRAIN_TOKEN": issue(keys, Role.DRAIN, DRAIN_NAME)}
    if "--node" in extra:
        env["PEERWATCH_GATE_TOKEN"] = issue(keys, Role.GATE, extra[extra.index("--node") + 1])
    return env


def actions(url: str, host: str | None = None) -> list[dict]:
    params = {"host": host} if host else {}
    return httpx.get(f"{url}/api/v1/actions", params=params).json()["actions"]


def test_a_fault_drains_the_node_with_the_reason_and_recovery_resumes_it(
        cluster: Cluster, server: str, tmp_path: Path) -> None:
    node = cluster.node
    report(server, node, CUT)
    for other in cluster.extra:
        report(server, other)
    out = drain(cluster, server, tmp_path, ACT).stdout
    assert "DRAIN" in cluster.state(node), out
    reason = cluster.reason(node)
    assert reason.startswith("peerwatch: GPU5 down:") and "NVLink" in reason, reason
    assert all("DRAIN" not in cluster.state(n) for n in cluster.extra)
    [took] = actions(server, node)
    assert (took["kind"], took["mode"]) == ("take_out", "act")
    assert took["actor"] == f"drain:{DRAIN_NAME}" and took["reason"] in reason
    [mark] = httpx.get(f"{server}/api/v1/drain/state").json()["marks"]
    assert mark["text"].startswith("taken out by peerwatch ") and mark["applied"]

    report(server, node)  # healthy again
    drain(cluster, server, tmp_path, ACT)  # starts the healthy wait (return_after: 0)
    assert "DRAIN" in cluster.state(node)
    drain(cluster, server, tmp_path, ACT)
    assert "DRAIN" not in cluster.state(node)
    assert [a["kind"] for a in actions(server, node)] == ["return", "recovering", "take_out"]
    assert httpx.get(f"{server}/api/v1/drain/state").json()["marks"] == []


def test_a_node_drained_by_an_operator_is_left_alone(
        cluster: Cluster, server: str, tmp_path: Path) -> None:
    node = cluster.node
    cluster.scontrol("update", f"nodename={node}", "state=drain", "reason=bad DIMM, ticket 42")
    report(server, node, CUT)
    out = drain(cluster, server, tmp_path, ACT).stdout
    assert f"{node}: keep: out by someone else (bad DIMM, ticket 42)" in out
    assert cluster.reason(node) == "bad DIMM, ticket 42"
    report(server, node)  # healthy: still not resumed, it is not peerwatch's drain
    drain(cluster, server, tmp_path, ACT)
    drain(cluster, server, tmp_path, ACT)
    assert "DRAIN" in cluster.state(node) and cluster.reason(node) == "bad DIMM, ticket 42"
    assert actions(server, node) == []


def test_the_breaker_trips_at_its_limit_and_a_person_resets_it(
        cluster: Cluster, server: str, tmp_path: Path) -> None:
    first, second = cluster.extra[0], cluster.extra[1]
    report(server, first, CUT)
    report(server, second, CUT)
    policy = ACT + "breaker: {max_per_window: 1, max_share_out: 1.0}\n"
    out = drain(cluster, server, tmp_path, policy).stdout
    assert "DRAIN" in cluster.state(first) and "DRAIN" not in cluster.state(second), out
    assert "(breaker): breaker_trip:" in out
    breaker = httpx.get(f"{server}/api/v1/drain/breaker").json()
    assert breaker["open"] and "1 take-outs within 600 s" in breaker["reason"]
    firing = httpx.get(f"{server}/api/v1/alerts").json()["alerts"]
    assert any(a["labels"]["alertname"] == "DrainBreakerOpen" for a in firing), firing
    drain(cluster, server, tmp_path, policy)  # still open: the second stays in
    assert "DRAIN" not in cluster.state(second)

    done = subprocess.run([sys.executable, "-m", "peerwatch.app.cli", "drain", "--reset-breaker",
                           "--server", server, "--by", "alice",
                           "--comment", "checked: two real faults"], capture_output=True,
                          text=True, timeout=60,
                          env={**os.environ, "PEERWATCH_ADMIN_TOKEN": ADMIN})
    assert done.returncode == 0, done.stderr
    assert "reset by admin:admin-token (says alice)" in done.stdout  # a shared token: marked
    assert not httpx.get(f"{server}/api/v1/drain/breaker").json()["open"]
    roomy = ACT + "breaker: {max_per_window: 5, max_share_out: 1.0}\n"
    drain(cluster, server, tmp_path, roomy)
    assert "DRAIN" in cluster.state(second)


def test_an_open_breaker_still_returns_recovered_nodes(
        cluster: Cluster, server: str, tmp_path: Path) -> None:
    node, other = cluster.node, cluster.extra[0]
    report(server, node, CUT)
    policy = ACT + "breaker: {max_per_window: 1, max_share_out: 1.0}\n"
    drain(cluster, server, tmp_path, policy)
    report(server, other, CUT)
    drain(cluster, server, tmp_path, policy)  # trips: the other is held
    assert httpx.get(f"{server}/api/v1/drain/breaker").json()["open"]
    report(server, node)
    drain(cluster, server, tmp_path, policy)
    drain(cluster, server, tmp_path, policy)
    assert "DRAIN" not in cluster.state(node) and "DRAIN" not in cluster.state(other)


def test_health_check_mode_acts_on_this_node_only_within_slurms_limit(
        cluster: Cluster, server: str, tmp_path: Path) -> None:
    node, other = cluster.node, cluster.extra[0]
    report(server, node, CUT)
    report(server, other, CUT)
    start = time.monotonic()
    drain(cluster, server, tmp_path, ACT, "--health-check", "--node", node)
    assert time.monotonic() - start < 60
    assert "DRAIN" in cluster.state(node) and "DRAIN" not in cluster.state(other)


def test_observe_mode_records_what_it_would_do_and_changes_nothing(
        cluster: Cluster, server: str, tmp_path: Path) -> None:
    node = cluster.node
    report(server, node, CUT)
    out = drain(cluster, server, tmp_path, ACT.replace("act", "observe")).stdout
    assert "recorded (observe: not done)" in out and "DRAIN" not in cluster.state(node)
    [would] = actions(server, node)
    assert (would["kind"], would["mode"]) == ("take_out", "observe")
    other = cluster.extra[0]
    report(server, other, CUT)
    dry = drain(cluster, server, tmp_path, ACT, "--dry-run").stdout
    assert f"{other}: take_out: GPU5 down: all 18 NVLinks down" in dry, dry
    assert f"{node}: forget: recorded in observe mode, now acting" in dry
    assert "DRAIN" not in cluster.state(node) and "DRAIN" not in cluster.state(other)
    assert len(actions(server)) == 1


def test_the_reason_says_what_to_do_within_slurms_length(
        cluster: Cluster, server: str, tmp_path: Path) -> None:
    node = cluster.node
    report(server, node, CUT)
    drain(cluster, server, tmp_path, ACT)
    reason = cluster.reason(node)
    what, _, todo = reason.partition("; do: ")
    assert what.startswith("peerwatch: GPU5 down: all 18 NVLinks down"), reason
    assert todo.startswith("reset the GPU"), reason
    assert len(reason.encode()) <= 255


def _person_drains(cluster: Cluster, node: str, on: str, reason: str):
    """A `say` for run_round that drains `node` as a person would, the moment the round has
    decided `on` for it and before it acts: between peerwatch's read and its write."""
    def say(line: str) -> None:
        if line.startswith(f"{node}: {on}:"):
            cluster.scontrol("update", f"nodename={node}", "state=drain", f"reason={reason}")
    return say


def test_a_persons_drain_inside_a_round_is_kept_and_never_resumed(
        cluster: Cluster, server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from peerwatch.app.drain.client import DrainClient
    from peerwatch.app.drain.controller import run_round
    from peerwatch.app.drain.policy import load_policy
    from peerwatch.app.drain.slurm import SlurmBackend

    monkeypatch.setenv("SLURM_CONF", cluster.env["SLURM_CONF"])
    node, other = cluster.node, cluster.extra[0]
    roomy = ACT + "breaker: {max_share_out: 1.0}\n"
    policy, client = load_policy(roomy), DrainClient(server, ADMIN)
    report(server, node, CUT)
    report(server, other, CUT)
    bob = "maint by bob: PSU swap"
    run_round(policy, SlurmBackend(), client, "test",
              say=_person_drains(cluster, node, "take_out", bob))
    assert cluster.reason(node) == bob  # bob's drain, not overwritten by peerwatch's
    assert cluster.reason(other).startswith("peerwatch: GPU5 down")
    [backed] = actions(server, node)
    assert backed["kind"] == "backed_off" and bob in backed["details"]["why"]

    # the other node: peerwatch's; bob drains it too as peerwatch is about to return it
    report(server, other)
    run_round(policy, SlurmBackend(), client, "test", say=lambda _: None)  # recovering
    run_round(policy, SlurmBackend(), client, "test",
              say=_person_drains(cluster, other, "return", "bob: reseat GPU5"))
    assert cluster.reason(other) == "bob: reseat GPU5" and "DRAIN" in cluster.state(other)
    assert actions(server, other)[0]["kind"] == "backed_off"
    report(server, node)
    for _ in range(2):  # healthy now: still theirs, never resumed
        drain(cluster, server, tmp_path, roomy)
    assert cluster.reason(node) == bob and cluster.reason(other) == "bob: reseat GPU5"
    assert "DRAIN" in cluster.state(node) and "DRAIN" in cluster.state(other)
    assert [a["kind"] for a in actions(server, other)][:2] == ["forget", "backed_off"]
    client.close()


# Long enough that a round slowed by a loaded machine (two CPU burners beside the suite)
# never lets the acting controller's lease lapse while it is alive.
LEASE_TTL_S = 30


def _loop(cluster: Cluster, url: str, policy: Path, log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "peerwatch.app.cli", "drain", "--server", url,
             "--policy", str(policy), "--interval", "0.5", "--lease-ttl", str(LEASE_TTL_S)],
            env={**cluster.env, **credentials(())}, stdout=out,
            stderr=subprocess.STDOUT)


def _holder(url: str) -> str | None:
    return httpx.get(f"{url}/api/v1/drain/lease", params={"scheduler": "slurm"}).json()["holder"]


def test_two_controllers_one_acts_and_the_other_takes_over_after_the_ttl(
        cluster: Cluster, server: str, tmp_path: Path) -> None:
    first, second = cluster.extra[0], cluster.extra[1]
    policy = tmp_path / "policy.yaml"
    policy.write_text(ACT + "breaker: {max_share_out: 1.0}\n")
    for n in (cluster.node, *cluster.extra):
        report(server, n)
    procs = {p.pid: (p, tmp_path / f"loop-{i}.out")
             for i, p in enumerate(_loop(cluster, server, policy, tmp_path / f"loop-{i}.out")
                                   for i in range(2))}
    try:
        holder = eventually(lambda: _holder(server))
        assert holder is not None, "no controller took the lease"
        acting, log = procs[int(holder.rsplit(":", 1)[1])]
        [(watching, watch_log)] = [v for pid, v in procs.items() if pid != acting.pid]
        report(server, first, CUT)
        cluster.wait_for(f"{first} drained", lambda: "DRAIN" in cluster.state(first))
        assert eventually(lambda: f"observing: the lease is held by {holder}" in
                          watch_log.read_text()), watch_log.read_text()
        # the loop drains the node, then writes its line: wait for the line, not the drain
        assert eventually(lambda: f"{first}: taken out" in log.read_text()), log.read_text()
        assert f"{first}: taken out" not in watch_log.read_text()
        state = httpx.get(f"{server}/api/v1/drain/state").json()
        assert state["lease"]["holder"] == holder

        acting.kill()  # stops without giving the lease back: the other waits out the ttl
        acting.wait(timeout=60)
        taken = eventually(lambda: (now := _holder(server)) not in (None, holder) and now,
                           within_s=10 * LEASE_TTL_S)
        assert taken == f"{holder.rsplit(':', 1)[0]}:{watching.pid}", taken
        report(server, second, CUT)
        cluster.wait_for(f"{second} drained", lambda: "DRAIN" in cluster.state(second))
        assert eventually(lambda: f"{second}: taken out" in watch_log.read_text()), \
            watch_log.read_text()
    finally:
        for p, _ in procs.values():
            p.kill()
            p.wait(timeout=60)
