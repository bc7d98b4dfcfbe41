"""What the host's OS says about the fabric's services and how long things have been up.

- Fabric Manager: NVSwitch systems need `nv-fabricmanager` running to train the switches and
  register GPUs. The GPU machines have no systemctl (and containers no systemd), so it is
  found as a process in /proc, and "installed" from its binary or unit file. Nothing to see
  (no /proc) is an unknown, never a "down".
- When the probe process started (from /proc/self/stat and the boot time) and when the
  NVIDIA driver was loaded (the kernel creates /sys/module/nvidia when it loads the module):
  links may still be training just after either, and the server holds pages for a settle
  time after them.
The root is injectable so tests build a small fake tree.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

from peerwatch.probes.report import FabricManagerInfo

FM_PROCESS = "nv-fabricmanager"
FM_FILES = ("usr/bin/nv-fabricmanager", "lib/systemd/system/nvidia-fabricmanager.service",
            "usr/lib/systemd/system/nvidia-fabricmanager.service",
            "etc/systemd/system/nvidia-fabricmanager.service")
_IMPORTED_AT = datetime.now(UTC)


class HostRuntime:
    def __init__(self, root: str | Path = "/") -> None:
        self.root = Path(root)

    def fabric_manager(self) -> FabricManagerInfo:
        installed = any((self.root / f).exists() for f in FM_FILES)
        proc = self.root / "proc"
        if not proc.is_dir():
            return FabricManagerInfo(running=None, how="no /proc to look in",
                                     installed=installed)
        for entry in proc.iterdir():
            if not entry.name.isdigit():
                continue
            try:
                comm = (entry / "comm").read_text().strip()
            except OSError:
                continue  # the process ended, or is not ours to read
            if comm == FM_PROCESS:
                return FabricManagerInfo(running=True, how=f"process {comm} pid {entry.name}",
                                         installed=True)
        how = f"no {FM_PROCESS} process" + ("" if installed else "; not installed")
        return FabricManagerInfo(running=False, how=how, installed=installed)

    def driver_loaded_at(self) -> datetime | None:
        try:
            return datetime.fromtimestamp((self.root / "sys/module/nvidia").stat().st_mtime, UTC)
        except OSError:
            return None

    def process_started_at(self) -> datetime:
        """This process's start (kernel's view), else when this module was imported."""
        try:
            fields = (self.root / "proc/self/stat").read_text().rsplit(")", 1)[1].split()
            ticks = int(fields[19])  # starttime, 22nd field; 20th after pid and comm
            boot = next(int(line.split()[1]) for line in
                        (self.root / "proc/stat").read_text().splitlines()
                        if line.startswith("btime "))
            return datetime.fromtimestamp(boot + ticks / os.sysconf("SC_CLK_TCK"), UTC)
        except (OSError, ValueError, IndexError, StopIteration):
            return _IMPORTED_AT
