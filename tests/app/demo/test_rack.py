"""`peerwatch demo` with its NVL72 rack: 18 simulated trays reporting over HTTP form one
NVLink domain in /api/v1/domains, with the tray the scenario moved to another clique."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from peerwatch.app.demo.fleet import plan_racks, rack_name
from peerwatch.app.demo.scenario import default_scenario
from peerwatch.probes.sim.faults import CliqueMoved, SwitchTrayLost
from peerwatch.probes.sim.presets import rack_cluster_uuid
from tests.conftest import SETTLE_S
from tests.probes.live_server import free_port


def _domains(base: str) -> list[dict[str, Any]]:
    try:
        r = httpx.get(f"{base}/api/v1/domains", timeout=2.0)
    except httpx.TransportError:
        return []
    return list(r.json()["domains"]) if r.status_code == 200 else []


def test_the_demo_rack_is_one_domain_of_18_trays(tmp_path: Path) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [sys.executable, "-m", "peerwatch.app.cli", "demo", "--port", str(port), "--data-dir",
         str(tmp_path / "demo"), "--hosts", "1", "--racks", "1", "--backfill-hours", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        found: list[dict[str, Any]] = []
        deadline = time.monotonic() + SETTLE_S
        while time.monotonic() < deadline:
            found = _domains(base)
            if found and found[0]["tray_count"] == 18 and len(found[0]["cliques"]) == 2:
                break
            time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert [d["id"] for d in found] == [rack_cluster_uuid("nvl72-a")], found
    (rack,) = found
    assert (rack["tray_count"], rack["gpu_count"]) == (18, 72)
    moved = next(c for c in rack["cliques"] if c["clique_id"] == 2)
    assert moved["hosts"] == ["nvl72-a-tray12"]
    assert proc.returncode == 0, err
    assert "nvl72-a-tray01 .. nvl72-a-tray18 (18 hosts): NVLink switch tray 4 lost" in out


def test_the_rack_story_lands_on_the_first_rack_only() -> None:
    fleet = plan_racks(2)
    assert [h.name for h in fleet[:2]] == ["nvl72-a-tray01", "nvl72-a-tray02"]
    assert fleet[18].name == "nvl72-b-tray01" and fleet[18].rack == rack_name(1)
    story = default_scenario(fleet)
    assert story.faults_at("nvl72-a-tray12", 0) == {CliqueMoved(clique_id=2)}
    lost = {h.name for h in fleet if SwitchTrayLost(tray=4) in story.faults_at(h.name, -8 * 3600)}
    assert lost == {f"nvl72-a-tray{n:02d}" for n in range(1, 19)}
    assert all(not story.faults_at(h.name, t) for h in fleet[18:] for t in (-8 * 3600, 0, 600))
