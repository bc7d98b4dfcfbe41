"""The IMEX daemon's state on this host, where IMEX exists.

IMEX (nvidia-imex) lets the GPUs of a multi-node NVLink domain (GB200/GB300 NVL72) import
each other's memory; `nvidia-imex-ctl -q` asks the local daemon whether its domain is
ready. A host without IMEX (any HGX board) says "not present", which is no fault. The state
word is kept as the tool printed it (its first line, e.g. "READY"); the server shows it
beside measured bandwidth and never trusts it alone (operators report IMEX-unhealthy states
on idle racks while NVLS all-reduce runs). The root and the command runner are injectable.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from peerwatch.probes.gpu_health import ImexStatus

IMEX_PROCESS = "nvidia-imex"
IMEX_FILES = ("usr/bin/nvidia-imex", "usr/bin/nvidia-imex-ctl", "etc/nvidia-imex/config.cfg")
Runner = Callable[[list[str]], str]


def run_ctl(argv: list[str]) -> str:
    """The command's stdout; OSError or CalledProcessError/TimeoutExpired when it fails."""
    done = subprocess.run(argv, capture_output=True, text=True, timeout=5, check=True)
    return done.stdout


def _running(root: Path) -> bool | None:
    proc = root / "proc"
    if not proc.is_dir():
        return None
    for entry in proc.iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "comm").read_text().strip() == IMEX_PROCESS:
                    return True
            except OSError:
                continue  # ended, or not ours to read
    return False


def imex_status(root: str | Path = "/", run: Runner = run_ctl,
                which: Callable[[str], str | None] = shutil.which) -> ImexStatus:
    base = Path(root)
    running = _running(base)
    ctl = which("nvidia-imex-ctl")
    installed = ctl is not None or any((base / f).exists() for f in IMEX_FILES)
    if not installed and not running:
        return ImexStatus(present=False, running=running,
                          how="not present: no nvidia-imex binary, config or process")
    if ctl is None:
        return ImexStatus(present=True, running=running, how="no nvidia-imex-ctl to ask")
    try:
        out = run([ctl, "-q"])
    except (OSError, subprocess.SubprocessError) as exc:
        return ImexStatus(present=True, running=running,
                          how=f"nvidia-imex-ctl -q failed: {exc}"[:300])
    lines = [line.strip() for line in out.splitlines() if line.strip()]
    return ImexStatus(present=True, running=running, state=lines[0][:64] if lines else None,
                      how="nvidia-imex-ctl -q")
