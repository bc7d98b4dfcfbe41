"""probes/nvidia/host_runtime.py on small fake /proc and /sys trees: Fabric Manager found as a
process, installed-but-down, not installed, or not observable; start times."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

from peerwatch.probes.nvidia.host_runtime import HostRuntime


def _proc(root: Path, pid: int, comm: str) -> None:
    (root / "proc" / str(pid)).mkdir(parents=True)
    (root / "proc" / str(pid) / "comm").write_text(comm + "\n")


def test_fabric_manager_running(tmp_path: Path) -> None:
    _proc(tmp_path, 1, "systemd")
    _proc(tmp_path, 4242, "nv-fabricmanager")
    fm = HostRuntime(tmp_path).fabric_manager()
    assert (fm.running, fm.how) == (True, "process nv-fabricmanager pid 4242")


def test_fabric_manager_installed_but_down(tmp_path: Path) -> None:
    _proc(tmp_path, 1, "systemd")
    unit = tmp_path / "lib/systemd/system/nvidia-fabricmanager.service"
    unit.parent.mkdir(parents=True)
    unit.write_text("[Service]\n")
    fm = HostRuntime(tmp_path).fabric_manager()
    assert (fm.running, fm.installed) == (False, True)


def test_fabric_manager_not_installed_or_not_visible(tmp_path: Path) -> None:
    _proc(tmp_path, 1, "init")
    fm = HostRuntime(tmp_path).fabric_manager()
    assert (fm.running, fm.installed) == (False, False)
    assert HostRuntime(tmp_path / "nothing").fabric_manager().running is None


def test_start_times(tmp_path: Path) -> None:
    assert HostRuntime(tmp_path).driver_loaded_at() is None
    module = tmp_path / "sys/module/nvidia"
    module.mkdir(parents=True)
    os.utime(module, (1_764_000_000, 1_764_000_000))
    assert HostRuntime(tmp_path).driver_loaded_at() == datetime.fromtimestamp(1_764_000_000, UTC)
    started = HostRuntime("/").process_started_at()  # this very test process, from /proc
    assert started <= datetime.now(UTC)
    assert HostRuntime(tmp_path).process_started_at() <= datetime.now(UTC)  # no /proc: import
