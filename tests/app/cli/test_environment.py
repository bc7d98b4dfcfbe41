"""An unknown `PEERWATCH_*` name is warned about with the closest known one; no name any
part of peerwatch reads is ever called unknown (every one in the repository is checked)."""

from __future__ import annotations

import argparse
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from peerwatch.app.cli.commands.serve import settings_from_args
from peerwatch.app.cli.environment import (
    OTHER_NAMES,
    known_names,
    settings_names,
    unknown_names,
    warn_unknown_names,
)

REPO = Path(__file__).resolve().parents[3]
NAME = re.compile(r"(?<![A-Za-z0-9_])PEERWATCH_[A-Z0-9_]*[A-Z0-9]")
TYPO_EXAMPLES = {"PEERWATCH_DATABSE_URL"}  # the misspelling the docs show being caught


def _repo_names() -> dict[str, str]:
    """Every PEERWATCH_* name written in a tracked file, with one file it is in."""
    files = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True,
                           check=True).stdout.split()
    found: dict[str, str] = {}
    for rel in files:
        if rel in ("tests/app/cli/test_environment.py",  # names misspelt on purpose
                   "app/cli/environment.py"):  # the list itself
            continue
        try:
            text = (REPO / rel).read_text()
        except (UnicodeDecodeError, IsADirectoryError, FileNotFoundError):
            continue
        for name in NAME.findall(text):
            found.setdefault(name, rel)
    return found


def test_every_name_in_the_repository_is_known() -> None:
    """A variable a script, a command or a test reads is listed in OTHER_NAMES (or is a
    settings field), so setting it never draws a "not a peerwatch setting" warning."""
    found = _repo_names()
    prefixes = {n for n in found if any(k.startswith(n + "_") for k in known_names())}
    unknown = {n: f for n, f in found.items()
               if n not in known_names() | prefixes | TYPO_EXAMPLES}
    assert not unknown, f"add to OTHER_NAMES in app/cli/environment.py: {unknown}"
    assert not OTHER_NAMES & settings_names()
    assert not OTHER_NAMES - set(found), "listed but read nowhere"


def test_no_known_name_is_warned_about() -> None:
    every = {name: "x" for name in known_names()}
    assert unknown_names(every) == []
    assert unknown_names({"peerwatch_stale_after_s": "9", "HOME": "/root"}) == []


@pytest.mark.parametrize(("typo", "meant"), [
    ("PEERWATCH_DATABSE_URL", "PEERWATCH_DATABASE_URL"),
    ("PEERWATCH_PROBE_TOKEN_S", "PEERWATCH_PROBE_TOKENS"),
    ("PEERWATCH_STALE_AFTER", "PEERWATCH_STALE_AFTER_S"),
    ("PEERWATCH_ALERTMANAGER", "PEERWATCH_ALERTMANAGER_URL"),
    ("PEERWATCH_PROBE_SERVER", "PEERWATCH_PROBE_SERVER_URL"),
])
def test_a_misspelt_name_points_at_the_closest(typo: str, meant: str) -> None:
    assert unknown_names({typo: "x"}) == [(typo, meant)]


def test_a_name_like_none_says_so(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, "peerwatch.config"):
        warn_unknown_names({"PEERWATCH_QQQ": "1"})
    assert caplog.messages == ["PEERWATCH_QQQ is not a peerwatch setting (ignored): "
                               "no part of peerwatch reads it"]


def test_migrate_warns_about_a_misspelt_url_and_still_runs(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PEERWATCH_")}
    done = subprocess.run(
        [sys.executable, "-m", "peerwatch.app.cli", "migrate"], text=True, timeout=300,
        capture_output=True, env={**env, "PEERWATCH_DATA_DIR": str(tmp_path),
                                  "PEERWATCH_DATABSE_URL": "postgresql://db.example/pw"})
    assert done.returncode == 0, done.stderr
    [warning] = [line for line in done.stderr.splitlines() if "PEERWATCH_DATABSE_URL" in line]
    assert warning.endswith("WARNING peerwatch.config: PEERWATCH_DATABSE_URL is not a peerwatch "
                            "setting (ignored): did you mean PEERWATCH_DATABASE_URL?")
    assert str(tmp_path / "peerwatch.db") in done.stdout  # what the operator must notice


def test_the_judge_serve_starts_does_not_warn_again(monkeypatch: pytest.MonkeyPatch,
                                                     caplog: pytest.LogCaptureFixture,
                                                     tmp_path: Path) -> None:
    monkeypatch.setenv("PEERWATCH_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("PEERWATCH_STALE_AFTR_S", "60")
    with caplog.at_level(logging.WARNING, "peerwatch.config"):
        settings_from_args(argparse.Namespace(database_url=None, wake_fd=5))
        assert caplog.messages == []
        settings_from_args(argparse.Namespace(database_url=None))
    assert caplog.messages == ["PEERWATCH_STALE_AFTR_S is not a peerwatch setting (ignored): "
                               "did you mean PEERWATCH_STALE_AFTER_S?"]
