"""alerts == verdicts == scheduler == PromQL for the network: each fault of the simulated
leaf/spine network is driven through the pair-job API; the server's firing network alerts,
its triangulated faults (GET /api/v1/network/pairs), the nodes the scheduler API leaves out
and promtool's evaluation of deploy/prometheus/peerwatch-rules.yml over the server's own
/metrics scrape all name the same fault."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml
from fastapi.testclient import TestClient

from peerwatch.probes.sim.simnet import (
    BadCable,
    CongestedSpine,
    LeafSlow,
    NetFault,
    PairPathSlow,
    SimNetwork,
    leaf_spine,
)
from tests.app.metrics_helpers import promtool
from tests.app.network.fleet import run_pair, setup

RULES = Path(__file__).resolve().parents[3] / "deploy" / "prometheus" / "peerwatch-rules.yml"
OBJECT = ("alertname", "host", "peer_host", "switch")
CASES: dict[str, tuple[SimNetwork, NetFault | None, set[tuple[str, str]]]] = {
    "healthy": (leaf_spine(3, 3), None, set()),
    "bad_cable": (leaf_spine(3, 3), BadCable("node-5"), {("NetworkHostPathSlow", "node-5")}),
    "congested_spine": (leaf_spine(4, 2, spines=2), CongestedSpine("spine1"),
                        {("NetworkSpineSlow", "spine1")}),
    "bad_leaf": (leaf_spine(3, 3), LeafSlow("leaf2"), {("NetworkLeafSlow", "leaf2")}),
    "pair_path": (leaf_spine(2, 3), PairPathSlow("node-1", "node-5"),
                  {("NetworkPathSlow", "node-1~node-5")}),
}


def drive(client: TestClient, net: SimNetwork, fault: NetFault | None) -> None:
    """Every pair measured healthy, then every pair again under the fault."""
    setup(client, net)
    hosts = sorted(net.hosts)
    pairs = [(a, b) for i, a in enumerate(hosts) for b in hosts[i + 1:]]
    for a, b in pairs:
        run_pair(client, net, a, b, 0)
    net.faults = [fault] if fault else []
    for a, b in pairs:
        run_pair(client, net, a, b, 1)


def server_alerts(client: TestClient) -> set[frozenset[tuple[str, str]]]:
    out = set()
    for a in client.get("/api/v1/alerts").json()["alerts"]:
        labels = a["labels"]
        if labels["alertname"].startswith("Network") and a["state"] == "firing":
            out.add(frozenset((k, v) for k, v in labels.items() if k in OBJECT))
    return out


def scrape(client: TestClient) -> list[tuple[str, str]]:
    lines = client.get("/metrics").text.splitlines()
    return [tuple(line.rsplit(" ", 1)) for line in lines
            if line.startswith("peerwatch_host_pair_slow{")]  # type: ignore[misc]


def promtool_agrees(series: list[tuple[str, str]], want: set[frozenset[tuple[str, str]]],
                    tmp_path: Path) -> None:
    samples = [{"labels": "{" + ", ".join(f'{k}="{v}"' for k, v in sorted(a)) + "}",
                "value": 1} for a in sorted(want, key=sorted)]
    test = {"rule_files": [str(RULES)], "evaluation_interval": "1m", "tests": [{
        "interval": "1m",
        "input_series": [{"series": s, "values": f"{v}x5"} for s, v in series],
        "promql_expr_test": [{
            "expr": f'group by ({", ".join(OBJECT)}) '
                    '(ALERTS{alertstate="firing", alertname=~"Network.*"})',
            "eval_time": "3m", "exp_samples": samples}]}]}
    path = tmp_path / "network.test.yml"
    path.write_text(yaml.safe_dump(test, sort_keys=False, width=1 << 20))
    done = subprocess.run([promtool(), "test", "rules", str(path)], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, (done.stdout + done.stderr)[:20000]


@pytest.mark.parametrize("case", sorted(CASES))
def test_alerts_verdicts_scheduler_and_promql_agree(case: str, client: TestClient,
                                                    tmp_path: Path) -> None:
    net, fault, want = CASES[case]
    drive(client, net, fault)
    faults = client.get("/api/v1/network/pairs").json()["faults"]
    named = {(f["kind"], f["subject"]) for f in faults}
    kinds = {"NetworkHostPathSlow": "host", "NetworkSpineSlow": "spine",
             "NetworkLeafSlow": "leaf", "NetworkPathSlow": "path"}
    assert named == {(kinds[a], s) for a, s in want}
    alerts = server_alerts(client)
    assert {(dict(a)["alertname"], dict(a).get("host") and "~".join(
        x for x in (dict(a)["host"], dict(a).get("peer_host")) if x) or dict(a)["switch"])
        for a in alerts} == want
    r = client.get("/api/v1/scheduler/nodes", params={"count": 2})
    assert r.status_code == 200, r.text
    left = {x["host"]: x["why"] for x in r.json()["left_out"]}
    faulted = {h for f in faults if f["kind"] in ("host", "leaf") for h in f["hosts"]}
    assert {h for h, why in left.items() if why.startswith("network fault")} == faulted
    promtool_agrees(scrape(client), alerts, tmp_path)
