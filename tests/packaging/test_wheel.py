"""Packaging test: the built wheel, installed in fresh virtual environments outside the
checkout, migrates PostgreSQL, serves the dashboard (page, a module, plotly.js) and takes a
report from a probe-only install that has neither FastAPI nor SQLAlchemy.
"""

from __future__ import annotations

import re
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest

from tests.conftest import SETTLE_S
from tests.packaging.conftest import Venv

pytestmark = pytest.mark.packaging
HOST = "wheel-host"


def issued(server: Venv, host: str) -> str:
    """`peerwatch token issue` from the installed wheel, in the server's data directory."""
    done = server.run("peerwatch", "token", "issue", "--host", host)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serving(venv: Venv, db_url: str) -> Iterator[str]:
    """`peerwatch serve` from the venv; yields its base URL once /healthz answers."""
    port = _free_port()
    proc = subprocess.Popen(
        [venv.bin("peerwatch"), "serve", "--port", str(port), "--no-local-probe",
         "--log-level", "warning"], cwd=venv.workdir, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True,
        env=venv.env(PEERWATCH_DATABASE_URL=db_url))
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + SETTLE_S
        while True:
            if proc.poll() is not None:
                pytest.fail(f"serve exited {proc.returncode}: {proc.stdout.read()}")  # type: ignore[union-attr]
            try:
                if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, f"no /healthz answer within {SETTLE_S:g} s"
            time.sleep(0.2)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_the_wheel_carries_migrations_and_dashboard(server_venv: Venv) -> None:
    where = server_venv.run("python", "-c",
                            "import peerwatch.app, peerwatch.app.runtime.assets as a; "
                            "print(peerwatch.app.__file__); "
                            "print(a.asset_dir('migrations')); print(a.asset_dir('frontend'))")
    assert where.returncode == 0, where.stderr
    site = str(server_venv.root)
    assert all(line.startswith(site) for line in where.stdout.split()), where.stdout


def test_installed_server_migrates_and_serves_the_dashboard(server_venv: Venv,
                                                            empty_pg_url: str) -> None:
    migrated = server_venv.run("peerwatch", "migrate", "--database-url", empty_pg_url)
    assert migrated.returncode == 0, migrated.stderr
    assert "upgraded empty database ->" in migrated.stdout
    with serving(server_venv, empty_pg_url) as base:
        page = httpx.get(f"{base}/")
        assert page.status_code == 200 and "<html" in page.text.lower()
        module = httpx.get(f"{base}/static/app.js")
        assert module.status_code == 200 and "import" in module.text
        plotly_url = re.search(r'"(/static/vendor/plotly-[^"]+\.min\.js)"', page.text)
        assert plotly_url, page.text
        plotly = httpx.get(base + plotly_url.group(1))
        assert plotly.status_code == 200 and len(plotly.content) > 1_000_000


def test_probe_only_install_has_no_server_packages(probe_venv: Venv) -> None:
    for module in ("fastapi", "sqlalchemy", "uvicorn", "alembic", "plotly", "psycopg"):
        found = probe_venv.run("python", "-c", f"import {module}")
        assert found.returncode != 0, f"{module} is installed in the probe-only venv"


def test_probe_only_install_probes_and_reports(probe_venv: Venv, server_venv: Venv,
                                               empty_pg_url: str) -> None:
    with serving(server_venv, empty_pg_url) as base:
        probe = probe_venv.run("peerwatch", "probe", "--once", "--fabric", "simulated:h200x2",
                               "--hostname", HOST, "--server", base, "--spool-dir",
                               str(probe_venv.workdir / "spool"), timeout=300,
                               PEERWATCH_PROBE_TOKEN=issued(server_venv, HOST))
    assert probe.returncode == 0, probe.stderr
    assert f"delivered to {base}" in probe.stdout


def test_probe_only_install_names_the_extra_for_server_commands(probe_venv: Venv) -> None:
    for argv in (["serve"], ["migrate", "--database-url", "sqlite:///x.db"], ["demo"]):
        result = probe_venv.run("peerwatch", *argv)
        assert result.returncode == 1, (argv, result.stderr)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and "pip install 'peerwatch[server]'" in lines[0], result.stderr


def test_probe_only_install_takes_posts_and_diffs_job_snapshots(
        probe_venv: Venv, server_venv: Venv, empty_pg_url: str) -> None:
    with serving(server_venv, empty_pg_url) as base:
        posted = probe_venv.run("peerwatch", "snapshot", "--fabric", "simulated:h200x2",
                                "--hostname", HOST, "--post", base, "--job-id", "7", "--phase",
                                "prolog", "--spool", str(probe_venv.workdir / "snapshots"),
                                PEERWATCH_PROBE_TOKEN=issued(server_venv, HOST))
    assert posted.returncode == 0 and "delivered" in posted.stderr, posted.stderr
    saved = probe_venv.run("peerwatch", "snapshot", "--fabric", "simulated:h200x2", "--json")
    path = probe_venv.workdir / "snapshot.json"
    path.write_text(saved.stdout)
    same = probe_venv.run("peerwatch", "snapshot", "--diff", str(path), str(path))
    assert (same.returncode, same.stdout) == (0, ""), same.stderr
