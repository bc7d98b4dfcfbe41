"""`peerwatch demo` as a user runs it: a subprocess that serves fleet data within 10 s of
its own CPU time, backfills history, and stops cleanly on Ctrl-C (SIGINT).

"Within 10 s" is the demo's CPU time (its process and children), not wall time: the suite
runs beside other work on shared machines, where wall time stretches with the load (and
the load average lags the load by a minute). Every wait is for the condition itself,
up to SETTLE_S."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest

from peerwatch.app.demo.fleet import plan_fleet
from peerwatch.app.demo.run import cpu_s, history_age_s
from peerwatch.app.demo.scenario import default_scenario
from peerwatch.probes.sim.faults import BandwidthFactor, ErrorGrowth, LinksDown, LinkXid, SwitchSxid
from tests.conftest import SETTLE_S, eventually
from tests.probes.live_server import free_port

FIRST_DATA_CPU_S = 10.0
ADMIN_TOKEN = "demo-admin-token"


def _poll(url: str) -> Any:
    try:
        response = httpx.get(url, timeout=2.0)
    except httpx.TransportError:
        return None
    return response.json() if response.status_code == 200 else None


def test_demo_serves_fleet_data_within_10_cpu_s_and_stops_cleanly(tmp_path: Path) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "peerwatch.app.cli", "demo", "--port", str(port), "--data-dir",
         str(tmp_path / "demo"), "--hosts", "4", "--racks", "0", "--admin-token",
         ADMIN_TOKEN],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        hosts: list[dict[str, Any]] = []
        while time.monotonic() - started < SETTLE_S and len(hosts) < 4:
            body = _poll(f"{base}/api/v1/hosts")
            hosts = (body or {}).get("hosts", [])
            time.sleep(0.5)
        first_data_s, seen_cpu_s = time.monotonic() - started, cpu_s(proc.pid)
        names = sorted(h["host"] for h in hosts)
        assert names == ["h200x2-01", "hgx8-01", "mesh4-01", "pcie4-01"], (
            f"after {first_data_s:.1f} s")
        assert all(h["last_report_at"] for h in hosts)
        history = sweep = slow_pcie = events = False
        deadline = time.monotonic() + SETTLE_S
        while not (history and sweep and slow_pcie and events) and time.monotonic() < deadline:
            slow_pcie = _pcie_measured_slow(base, "mesh4-01", 1)
            events = _xid_and_sxid_shown(base, "hgx8-01")
            body = _poll(f"{base}/api/v1/hosts") or {}
            sweep = any(h["last_sweep_at"] for h in body.get("hosts", []))
            day_ago = datetime.now(UTC) - timedelta(hours=24)
            window = {"src": 0, "dst": 1, "test": "ce_write", "step": 3600,
                      "since": (day_ago - timedelta(hours=1)).isoformat(),
                      "until": (day_ago + timedelta(hours=1)).isoformat()}
            series = _poll(f"{base}/api/v1/hosts/h200x2-01/series?{urlencode(window)}") or {}
            history = any(b["count"] for b in series.get("buckets", []))
            time.sleep(0.5)
        assert sweep, "no live sweep reached the server"
        _assert_admin_token_works(base)
        assert history, "no backfilled report from a day ago reached the server"
        assert slow_pcie, "mesh4-01 GPU1's downtrained PCIe link was not measured slow"
        assert events, "hgx8-01 shows no Xid 74 on GPU4 link 3 and SXid 12028 with an alert"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=SETTLE_S)  # generous: busy, it stops slowly
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert f"dashboard: {base}/" in out and f"API docs:  {base}/docs" in out
    assert f"admin credential: {ADMIN_TOKEN} " in out
    first = re.search(r"first data: the first host reported [\d.]+ s after start, 4 of 4 hosts "
                      r"after [\d.]+ s \(([\d.]+) s of CPU\)", out)
    assert first, out
    # the demo's own reading when its last host's first report was answered: this test's
    # polls see it later, by however long a loaded machine keeps them waiting
    assert float(first[1]) <= FIRST_DATA_CPU_S, (
        f"first data took {first[1]} s of the demo's CPU (this test saw the hosts after "
        f"{first_data_s:.1f} s wall, {seen_cpu_s:.1f} s of CPU)")
    assert out.rstrip().endswith("peerwatch demo: stopped")
    assert "Traceback" not in err


def _pcie_measured_slow(base: str, host: str, gpu: int) -> bool:
    """The host's health answer shows the GPU's h2d and d2h at a quarter of what its slot
    offers, the basis naming how the link trained, and the GPU degraded. (That the tests
    turn degraded once low for the sustain time: tests/app/alerting/test_rules_pcie.py.)"""
    body = _poll(f"{base}/api/v1/hosts/{host}/health") or {}
    mine = next((g for g in body.get("gpus", []) if g["gpu"] == gpu), {"tests": []})
    slow = [t for t in mine["tests"] if t["test"] in ("h2d", "d2h")
            and (t["ratio_expected"] or 1) < 0.3 and t["expected_basis"].endswith(" x4 now")]
    return len(slow) == 2 and mine["verdict"] == "degraded"


def _xid_and_sxid_shown(base: str, host: str) -> bool:
    """The demo's events: the live Xid 74 on GPU4 link 3 and the SXid, listed with their
    meaning, and an alert for each (XidFault once three came, XidWarning before)."""
    body = _poll(f"{base}/api/v1/hosts/{host}/events") or {}
    seen = {(e["label"], e["gpu"], e["link"]) for e in body.get("events", [])}
    alerts = (_poll(f"{base}/api/v1/alerts?host={host}") or {}).get("alerts", [])
    names = {(a["alertname"], a["labels"].get("xid")) for a in alerts}
    return ({("Xid 74", 4, 3), ("SXid 12028", None, 32)} <= seen
            and bool(names & {("XidWarning", "xid74"), ("XidFault", "xid74")})
            and ("XidWarning", "sxid12028") in names)


def _assert_admin_token_works(base: str) -> None:
    ack = {"by": "test"}
    right = httpx.post(f"{base}/api/v1/alerts/999999/ack", json=ack,
                       headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    wrong = httpx.post(f"{base}/api/v1/alerts/999999/ack", json=ack,
                       headers={"Authorization": "Bearer not-the-token"})
    assert (right.status_code, wrong.status_code) == (404, 403)


def test_a_restart_dates_the_history_from_the_first_run(tmp_path: Path) -> None:
    story = default_scenario(plan_fleet(12))
    assert history_age_s(tmp_path, True, now=1000.0) == 0.0
    assert history_age_s(tmp_path, False, now=1000.0 + 3 * 3600) == 3 * 3600
    fresh, restarted = story.describe(), story.describe(history_age_s=3 * 3600)
    assert " -10.0 h hgx8-01: four NVLinks of GPU5 down for an hour" in fresh
    assert " -13.0 h hgx8-01: four NVLinks of GPU5 down for an hour" in restarted
    assert "  +180 s hgx8-01: two NVLinks of GPU3 go down" in restarted  # live: from now


def test_the_scenario_develops_faults_over_time() -> None:
    fleet = plan_fleet(12)
    story = default_scenario(fleet)
    xid = LinkXid(gpu=4, link=3, every_s=30)  # the live Xid 74s (tests/app/demo/test_demo.py)
    assert story.faults_at("hgx8-01", 19) == frozenset()
    assert story.faults_at("hgx8-01", 179) == {xid}
    assert story.faults_at("hgx8-01", 181) == {xid, LinksDown(gpu=3, count=2)}
    early, late = (next(iter(story.faults_at("h200x2-01", t))) for t in (90, 900))
    assert isinstance(early, BandwidthFactor) and isinstance(late, BandwidthFactor)
    assert late.factor < early.factor < 1
    assert SwitchSxid(switch=0, sxid=12028) in story.faults_at("hgx8-02", 60)
    rates = [next(f for f in story.faults_at("hgx8-02", t) if isinstance(f, ErrorGrowth))
             for t in (60, 400)]
    assert all(isinstance(r, ErrorGrowth) and r.counter == "replay" for r in rates)
    assert rates[1].per_second > rates[0].per_second  # type: ignore[union-attr]
    assert not story.silent_at("pcie4-01", 200) and story.silent_at("pcie4-01", 241)
    assert story.faults_at("hgx8-01", -9.5 * 3600) == {LinksDown(gpu=5, count=4)}


def test_a_small_fleet_still_has_every_preset_and_distinct_names() -> None:
    fleet = plan_fleet(4, seed=1)
    assert [h.preset for h in fleet] == ["hgx8", "h200x2", "mesh4", "pcie4"]
    assert len({h.name for h in plan_fleet(12)}) == 12
    assert len({h.seed for h in fleet}) == 4


def test_command_line_defaults_are_the_demo_defaults() -> None:
    from peerwatch.app.cli import build_parser
    from peerwatch.app.demo.run import DemoOptions

    args = build_parser().parse_args(["demo"])
    defaults = DemoOptions()
    assert (args.port, args.bind, args.data_dir, args.hosts, args.racks, args.seed,
            args.backfill_hours) == (defaults.port, defaults.bind, defaults.data_dir,
                                     defaults.hosts, defaults.racks, defaults.seed,
                                     defaults.backfill_hours)


def test_the_default_story_has_a_lost_gpu_a_skewed_clock_and_a_maintenance_window() -> None:
    from peerwatch.app.demo.fleet import plan_fleet
    from peerwatch.app.demo.scenario import default_scenario
    from peerwatch.probes.sim.faults import GpuLost, LinksDown
    scenario = default_scenario(plan_fleet(12))
    assert GpuLost(gpu=6) in scenario.faults_at("hgx8-03", 200)
    assert scenario.clock_skew_s("mesh4-02") == -180.0
    assert [m.host for m in scenario.maintenance] == ["h200x2-02"]
    assert LinksDown(gpu=1, count=2) in scenario.faults_at("h200x2-02", 100)
    story = "\n".join(scenario.describe())
    assert "GPU6 falls off the bus" in story and "probe clock runs 3 min behind" in story
    small = default_scenario(plan_fleet(4))  # too few hosts: nothing lands on the wrong one
    assert small.clocks == () and small.maintenance == ()
    assert GpuLost(gpu=6) not in small.faults_at("hgx8-01", 200)


def test_the_story_has_a_downtrained_pcie_link_in_any_fleet() -> None:
    from peerwatch.app.demo.fleet import plan_fleet
    from peerwatch.app.demo.scenario import default_scenario
    from peerwatch.probes.sim.faults import PcieDowntrained
    assert PcieDowntrained(gpu=2, width=4) in default_scenario(plan_fleet(12)).faults_at(
        "pcie4-02", -2 * 3600)
    assert PcieDowntrained(gpu=1, width=4) in default_scenario(plan_fleet(4)).faults_at(
        "mesh4-01", 0)


def test_one_hgx8_board_is_slow_from_the_start_and_the_demo_judges_groups_of_three(
        tmp_path: Path) -> None:
    """docs/fleet-peers.md: hgx8-03 is 9 % slow on every path in the backfilled day and live,
    so its baseline is slow too; the demo's groups have three hosts, its minimum is three."""
    from peerwatch.app.demo.run import DemoOptions, demo_settings

    story = default_scenario(plan_fleet(12))
    for t in (-23 * 3600, 0, 900):
        slow = {f for f in story.faults_at("hgx8-03", t) if isinstance(f, BandwidthFactor)}
        assert len(slow) == 28 and {f.factor for f in slow} == {0.91}
        assert all(f.both_directions for f in slow)
    assert "  always hgx8-03: every path 9% slow" in story.describe()[0]
    assert not any(isinstance(f, BandwidthFactor) for f in story.faults_at("hgx8-01", 0))
    assert demo_settings(DemoOptions(data_dir=tmp_path)).fleet_peer_min_hosts == 3
    assert default_scenario(plan_fleet(4)).faults_at("hgx8-01", 0) == frozenset()


def test_the_live_hosts_start_spread_over_one_inventory_interval(tmp_path: Path) -> None:
    """A fresh demo's probes do not all send their first reports in one instant (its own
    server refused them, 429, over the URL it had just printed): host i starts i/n of an
    inventory interval after the fleet, the first at once, all within the interval."""
    from peerwatch.app.demo.live import LiveFleet, LiveIntervals

    fleet = plan_fleet(12, seed=1)
    live = LiveFleet(fleet, default_scenario(fleet), "http://127.0.0.1:1", lambda _: "token",
                     tmp_path / "spool", LiveIntervals(inventory_s=6.0))
    try:
        starts = [live.first_report_s(i) for i in range(len(fleet))]
    finally:
        for host in live.hosts:
            host.fabric.close()
    assert starts[0] == 0.0 and starts == sorted(set(starts)) and max(starts) < 6.0
    assert starts[1] - starts[0] == pytest.approx(0.5)


def test_a_first_report_the_server_never_took_still_lets_the_history_begin(
        tmp_path: Path) -> None:
    """The backfill waits for every live host's first report to have its outcome, not for
    a fixed few seconds (app/demo/run.py): spooled counts as well as delivered, so a server
    that refuses them (here: nothing listens) does not hold the history back."""
    from peerwatch.app.demo.live import LiveFleet, LiveIntervals

    fleet = plan_fleet(3, seed=1)
    live = LiveFleet(fleet, default_scenario(fleet), "http://127.0.0.1:1", lambda _: "token",
                     tmp_path / "spool", LiveIntervals(inventory_s=0.3))
    assert live.answered() == 0
    live.start()
    try:
        assert eventually(lambda: live.answered() == len(fleet), SETTLE_S)
        assert live.reporting() == 0
    finally:
        live.stop()
    assert all(any((tmp_path / "spool" / h.name).rglob("*")) for h in fleet)
