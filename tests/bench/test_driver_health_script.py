"""bench/gpu/driver_health.py's CPU path: its recorder wraps a pynvml-shaped module (the
replay of the hand-written fixture), the probe's `Nvml` reads through it, and what it
writes is a fixture the replay reads back to the same readings; the table names every read
and says "not supported" where the GPU does not offer one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.gpu import driver_health
from peerwatch.probes.gpu_health import READS
from peerwatch.probes.nvidia.sysfs import Sysfs
from tests.probes.nvidia.replay_pynvml import FIXTURES, ReplayPynvml, load, sysfs_tree

HAND = FIXTURES / "hand_written_h100x2.json"


def test_what_it_records_replays_to_the_same_readings(tmp_path: Path) -> None:
    fixture = load(HAND)
    sysfs = Sysfs(sysfs_tree(fixture, tmp_path / "a"))
    found = driver_health.record(ReplayPynvml(fixture), sysfs, imex_root=tmp_path)
    assert found["format"] == fixture["format"] and not found["hand_written"]
    assert [g["health"] for g in found["gpus"]] == [g["health"] for g in fixture["gpus"]]
    assert [g["aer"] for g in found["gpus"]] == [g["aer"] for g in fixture["gpus"]]
    assert found["imex"]["present"] is False
    again = json.loads(json.dumps(found))  # as written to disk
    sysfs = Sysfs(sysfs_tree(again, tmp_path / "b"))
    twice = driver_health.record(ReplayPynvml(again), sysfs, imex_root=tmp_path)
    assert [g["health"] for g in twice["gpus"]] == [g["health"] for g in found["gpus"]]
    assert [g["aer"] for g in twice["gpus"]] == [g["aer"] for g in found["gpus"]]


def test_the_table_names_every_read(tmp_path: Path) -> None:
    fixture = load(HAND)
    found = driver_health.record(ReplayPynvml(fixture), Sysfs(sysfs_tree(fixture, tmp_path)),
                                 imex_root=tmp_path)
    table, clean = driver_health.lines(found)
    assert clean and table[0] == "driver 580.95.05"
    for gpu in (0, 1):
        for read in (*READS, "pcie_aer"):
            assert any(line.startswith(f"GPU{gpu} {read}") for line in table), read
    assert any("retired_pages" in line and "not supported:" in line for line in table)
    assert table[-1].startswith("imex not present")


def test_main_writes_the_fixture_under_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    fixture = load(HAND)
    tree = sysfs_tree(fixture, tmp_path / "sys")
    monkeypatch.setattr(driver_health, "load_pynvml", lambda: ReplayPynvml(fixture))
    monkeypatch.setattr(driver_health, "Sysfs", lambda: Sysfs(tree))
    monkeypatch.setenv("OUT", str(tmp_path / "out"))
    assert driver_health.main() == 0
    written = json.loads((tmp_path / "out" / "driver_health.json").read_text())
    assert written["gpus"][1]["health"]["recovery_action"] == "drain_p2p"
    assert "raw answers:" in capsys.readouterr().out
