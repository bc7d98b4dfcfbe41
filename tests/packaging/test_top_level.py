"""The wheel installs `peerwatch` and nothing else at the top level: a user's own `app` or
`probes` package lives beside it, each import finding its own, and nothing of peerwatch
reaches for a top-level name it does not own.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from tests.packaging.conftest import Venv

pytestmark = pytest.mark.packaging
OWN = ("app", "probes")


def test_the_wheel_records_nothing_at_the_top_but_peerwatch(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as built:
        (record,) = [n for n in built.namelist() if n.endswith(".dist-info/RECORD")]
        paths = [line.split(",", 1)[0] for line in built.read(record).decode().splitlines()]
    tops = {path.split("/", 1)[0] for path in paths if path}
    assert not tops & set(OWN), sorted(tops)
    assert {top for top in tops if not top.startswith("peerwatch")} == set(), sorted(tops)


def test_a_top_level_app_beside_the_wheel_stays_the_users(server_venv: Venv,
                                                            tmp_path: Path) -> None:
    for name in OWN:
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text(f"WHO = {f'user package {name}'!r}\n")
    both = server_venv.run(
        "python", "-c",
        "import app, probes, peerwatch.app.main, peerwatch.probes.agent.runner as r; "
        "print(app.WHO); print(probes.WHO); print(peerwatch.app.main.__file__); "
        "print(r.__file__)", PYTHONPATH=str(tmp_path))
    assert both.returncode == 0, both.stderr
    user_app, user_probes, server, probe = both.stdout.splitlines()
    assert (user_app, user_probes) == ("user package app", "user package probes")
    site = str(server_venv.root)
    assert server.startswith(site) and probe.startswith(site), both.stdout
