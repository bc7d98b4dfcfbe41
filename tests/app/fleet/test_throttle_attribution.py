"""A GPU held below its clocks (a power cap) is slow with every
peer and below its fleet peers; the throttle explanation owns that, before the pattern
attribution and the fleet peer rules: GPUThrottled is its one page, on the server and in
PromQL — no GPUPeerCopiesSlow, GPUBelowFleetPeers or PCIeBandwidthDegraded beside it, also
in the sweeps after a power cap that comes and goes ran free while its low runs were still
degraded. Real ingest of simulated hosts on SQLite and PostgreSQL; the PromQL side is the
server's /metrics scraped into a promtool test over deploy/prometheus/peerwatch-rules.yml.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from peerwatch.app.main import create_app
from peerwatch.probes.sim.faults import ThrottledGpu
from tests.app.alerting.promql_twin import RULES
from tests.app.fleet.peerfleet import PeerFleet
from tests.app.metrics_helpers import promtool

# The rules whose every input is the server's /metrics (the agents' series are not scraped
# here): what this test compares between the server and PromQL.
SERVER_FED = ("GPUThrottled", "GPUBelowFleetPeers", "GPUPeerCopiesSlow",
              "HostBelowFleetPeers", "P2PBelowFleetPeers")
YIELDING = {"GPUPeerCopiesSlow", "GPUBelowFleetPeers", "PCIeBandwidthDegraded",
            "P2PBandwidthDegraded", "P2PBelowFleetPeers"}


def _firing(fleet: PeerFleet, name: str) -> set[tuple[str, str | None]]:
    return {(a.rule, a.labels.get("gpu")) for a in fleet.host(name).alerts("firing")}


def _promql_firing(fleet: PeerFleet, tmp_path: Path, want: set[tuple[str, str | None]]
                   ) -> subprocess.CompletedProcess[str]:
    """promtool over the server's /metrics as it reads now, held for 10 minutes: the
    server-fed rules must fire exactly `want` on host "odd"."""
    with TestClient(create_app(fleet.settings)) as client:
        text = client.get("/metrics").text
    series = []
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if not s.name.startswith("peerwatch_") or "timestamp" in s.name:
                continue
            labels = ",".join(f'{k}="{v}"' for k, v in sorted(s.labels.items()))
            series.append({"series": f"{s.name}{{{labels}}}", "values": f"{s.value:.17g}x10"})
    names = "|".join(SERVER_FED)
    expect = [{"labels": f'{{alertname="{r}", gpu="{g}", host="odd"}}' if g is not None
               else f'{{alertname="{r}", host="odd"}}', "value": 1}
              for r, g in sorted(want, key=str) if r in SERVER_FED]
    test = {"rule_files": [str(RULES)], "evaluation_interval": "1m", "tests": [{
        "interval": "1m", "input_series": series,
        "promql_expr_test": [{
            "expr": f'group by (alertname, host, gpu) (ALERTS{{alertstate="firing", '
                    f'host="odd", alertname=~"{names}"}})',
            "eval_time": "5m", "exp_samples": expect}]}]}
    path = tmp_path / "throttle.test.yml"
    path.write_text(yaml.safe_dump(test, sort_keys=False, width=1 << 20))
    return subprocess.run([promtool(), "test", "rules", str(path)], capture_output=True,
                          text=True, timeout=300)


def test_a_power_capped_gpu_pages_only_gpu_throttled_on_the_server_and_in_promql(
        fleet: PeerFleet, tmp_path: Path) -> None:
    """Its pairs and own copies at 0.6: low by its own baseline. (A milder cap, above the
    baseline's 0.8 and below the fleet floor, is no GPUBelowFleetPeers ground on main either:
    throttled samples are never checked against the fleet.)"""
    for i in range(5):
        fleet.add(f"ok-{i}")
    cap = ThrottledGpu(gpu=1, reason="power", factor=0.6)
    odd = fleet.add("odd")
    fleet.sweeps(6)
    fleet.round()
    odd.inject(cap)
    throttled_seen = 0
    for sweep in range(9):  # capped for six sweeps, then three running free
        if sweep == 6:
            odd.clear(cap)
        fleet.sweeps(1)
        fleet.round()
        firing = _firing(fleet, "odd")
        if ("GPUThrottled", "1") in firing:
            throttled_seen += 1
            assert {r for r, g in firing if r in YIELDING} == set(), (sweep, firing)
            done = _promql_firing(fleet, tmp_path, firing)
            assert done.returncode == 0, (sweep, firing, done.stdout + done.stderr)
    assert throttled_seen >= 4
    h = fleet.health("odd")
    assert "throttle" not in h.gpu_facts.get(1, {})  # it ran free long enough: over
    assert _firing(fleet, "odd") == set()
