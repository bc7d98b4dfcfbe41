"""The IMEX daemon's state: not present (no error) where IMEX is not installed, the ctl's
answer where it is, a failed ask said plainly."""

from __future__ import annotations

import subprocess
from pathlib import Path

from peerwatch.probes.nvidia.imex import imex_status


def _proc(root: Path, comm: str | None) -> None:
    (root / "proc").mkdir(parents=True)
    if comm:
        (root / "proc/4242").mkdir()
        (root / "proc/4242/comm").write_text(comm + "\n")


def test_a_host_without_imex_says_not_present(tmp_path: Path) -> None:
    _proc(tmp_path, "sshd")
    status = imex_status(tmp_path, run=lambda argv: "never asked", which=lambda _: None)
    assert (status.present, status.running, status.state) == (False, False, None)
    assert status.how.startswith("not present")


def test_the_ctl_answer_is_the_state(tmp_path: Path) -> None:
    _proc(tmp_path, "nvidia-imex")
    asked: list[list[str]] = []
    status = imex_status(tmp_path, run=lambda argv: asked.append(argv) or "READY\n",
                         which=lambda name: f"/usr/bin/{name}")
    assert (status.present, status.running, status.state) == (True, True, "READY")
    assert asked == [["/usr/bin/nvidia-imex-ctl", "-q"]]


def test_a_failing_ctl_is_said_not_raised(tmp_path: Path) -> None:
    _proc(tmp_path, None)

    def fails(argv: list[str]) -> str:
        raise subprocess.CalledProcessError(1, argv)

    status = imex_status(tmp_path, run=fails, which=lambda name: f"/usr/bin/{name}")
    assert status.present and status.state is None and "failed" in status.how
