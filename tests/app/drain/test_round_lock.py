"""One health-check round per node (app/drain/round_lock.py): a round that finds another
still running does nothing, a lock directory anyone else can write is refused, and the
command says each in a line."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from peerwatch.app.drain.round_lock import LockUnavailable, node_round
from tests.app.drain.test_cli import down, drain


def test_a_second_round_for_the_node_is_kept_out_until_the_first_ends(tmp_path: Path) -> None:
    with node_round("n1", tmp_path) as first:
        assert first
        with node_round("n1", tmp_path) as second, node_round("n2", tmp_path) as other:
            assert not second and other  # each node has its own
    with node_round("n1", tmp_path) as again:
        assert again


def test_a_directory_others_may_write_is_refused(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(LockUnavailable, match="not a directory of this user alone"), \
            node_round("n1", shared):
        pass
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    (tmp_path / "elsewhere").mkdir(mode=0o700)
    with pytest.raises(LockUnavailable, match="not a directory"), node_round("n1", link):
        pass


def test_the_health_check_does_nothing_beside_a_running_round(tmp_path: Path) -> None:
    env = {**os.environ, "PEERWATCH_GATE_TOKEN": "t", "PEERWATCH_RUN_DIR": str(tmp_path)}
    argv = ("--health-check", "--node", "n1", "--server", down(), "--scheduler", "none")
    with node_round("n1", tmp_path) as held:
        assert held
        busy = drain(*argv, env=env)
    assert busy.returncode == 0
    assert busy.stderr.strip() == ("peerwatch drain: another health-check round for n1 is "
                                   "still running; this one does nothing")
    alone = drain(*argv, env=env)  # the lock is free: the round runs (and finds no server)
    assert alone.returncode == 0 and "nothing done" in alone.stderr


def test_an_unusable_lock_directory_is_said_and_the_round_still_runs(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    env = {**os.environ, "PEERWATCH_GATE_TOKEN": "t", "PEERWATCH_RUN_DIR": str(blocker)}
    done = drain("--health-check", "--node", "n1", "--server", down(), "--scheduler", "none",
                 env=env)
    assert done.returncode == 0
    assert f"no round lock ({blocker}: File exists); acting without it" in done.stderr
    assert "nothing done" in done.stderr
