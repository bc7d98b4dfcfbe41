"""`peerwatch snapshot` as a person runs it (a fresh `python -m peerwatch.app.cli` process): the
summary, --json, --diff with diff(1)'s exit statuses, and one-line errors."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from peerwatch.probes.sim.faults import LinksDown
from peerwatch.probes.sim.simulated import SimulatedFabric
from peerwatch.probes.snapshot_read import take_snapshot
from tests.cli.test_user_errors import REPO


def peerwatch(*argv: str) -> subprocess.CompletedProcess[str]:
    """`peerwatch snapshot` with a (wrong) probe credential in its environment."""
    env = {**os.environ, "PEERWATCH_PROBE_TOKEN": "t"}
    return subprocess.run([sys.executable, "-m", "peerwatch.app.cli", "snapshot", *argv], cwd=REPO,
                          capture_output=True, text=True, timeout=120, env=env)


def test_summary_and_json_of_a_simulated_host() -> None:
    text = peerwatch("--fabric", "simulated:hgx8")
    assert text.returncode == 0, text.stderr
    assert "GPUs: 8 (8 x NVIDIA H200)" in text.stdout and "NVLink: 144 ports, 144 up" in text.stdout
    doc = json.loads(peerwatch("--fabric", "simulated:hgx8", "--json", "--job-id", "5",
                               "--phase", "prolog").stdout)
    assert doc["schema_version"] == 1 and doc["job_id"] == "5" and doc["phase"] == "prolog"
    assert doc["took_s"] < 1 and len(doc["inventory"]["gpus"]) == 8
    assert all(g["driver"]["row_remap"]["failure"] is False for g in doc["inventory"]["gpus"])
    assert len(doc["counters"]["aer"]) == 8 and "imex" in doc["inventory"]


def test_diff_exits_like_diff1(tmp_path: Path) -> None:
    fabric = SimulatedFabric("hgx8")
    before = tmp_path / "before.json"
    before.write_text(take_snapshot(fabric).model_dump_json())
    same = peerwatch("--diff", str(before), str(before))
    assert (same.returncode, same.stdout) == (0, "")
    fabric.inject(LinksDown(gpu=1, links=(0, 1)))
    after = tmp_path / "after.json"
    after.write_text(take_snapshot(fabric).model_dump_json())
    changed = peerwatch("--diff", str(before), str(after))
    assert changed.returncode == 1
    assert changed.stdout.splitlines() == ["CRITICAL GPU1 link 0 went down",
                                           "CRITICAL GPU1 link 1 went down"]
    as_json = json.loads(peerwatch("--diff", str(before), str(after), "--json").stdout)
    assert as_json[0] == {"severity": "critical", "kind": "link_down",
                          "text": "GPU1 link 0 went down"}


def test_bad_files_are_one_line_and_status_2(tmp_path: Path) -> None:
    good = tmp_path / "good.json"
    good.write_text(take_snapshot(SimulatedFabric("h200x2")).model_dump_json())
    (tmp_path / "text.json").write_text("not json")
    (tmp_path / "report.json").write_text('{"kind": "sweep"}')
    for other, says in (("missing.json", "cannot read"), ("text.json", "is not JSON"),
                        ("report.json", "is not a peerwatch snapshot")):
        out = peerwatch("--diff", str(good), str(tmp_path / other))
        assert out.returncode == 2 and out.stdout == ""
        assert len(out.stderr.splitlines()) == 1 and says in out.stderr, out.stderr


def test_help_states_the_exit_statuses() -> None:
    out = subprocess.run([sys.executable, "-m", "peerwatch.app.cli", "snapshot", "--help"],
                         cwd=REPO,
                         capture_output=True, text=True, timeout=60).stdout
    assert "0 when nothing changed and 1 when something did" in " ".join(out.split())


def test_usage_errors_and_an_unreachable_server_without_spool() -> None:
    bad_job = peerwatch("--fabric", "simulated:h200x2", "--job-id", "a/b")
    assert bad_job.returncode == 2 and "job id 'a/b'" in bad_job.stderr
    flush = peerwatch("--flush", "--post", "http://127.0.0.1:1")
    assert flush.returncode == 2 and "--flush needs" in flush.stderr
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    lost = peerwatch("--fabric", "simulated:h200x2", "--post", f"http://127.0.0.1:{port}")
    assert lost.returncode == 1 and "not delivered" in lost.stderr


def test_a_snapshot_imports_no_server_package(tmp_path: Path) -> None:
    """Only the command being run is imported: a prolog's snapshot never loads FastAPI or
    SQLAlchemy, even where they are installed."""
    code = ("import sys; from peerwatch.app.cli import main; "
            "rc = main(['snapshot', '--fabric', 'simulated:h200x2', '--json']); "
            "print(rc, sorted(m for m in ('fastapi', 'sqlalchemy', 'uvicorn', 'alembic') "
            "if m in sys.modules), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert done.stderr.strip().splitlines()[-1] == "0 []", done.stderr


def test_auto_never_posts_or_spools_made_up_data(tmp_path: Path) -> None:
    """Without GPUs, `--fabric auto` (the default) refuses to post or spool: the simulated
    fallback is for looking around, never for a server. A listening
    socket stands in for the server and must see no connection."""
    from peerwatch.probes.errors import FabricUnavailable
    from peerwatch.probes.fabric_select import open_real

    try:
        open_real(quick=True).close()
        import pytest

        pytest.skip("NVML works on this machine: auto is the real GPUs here")
    except FabricUnavailable:
        pass
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        server.setblocking(False)
        url = f"http://127.0.0.1:{server.getsockname()[1]}"
        posted = peerwatch("--post", url, "--job-id", "7", "--phase", "prolog")
        spooled = peerwatch("--post", url, "--spool", str(tmp_path / "spool"))
        try:
            server.accept()
            connected = True
        except BlockingIOError:
            connected = False
    for result in (posted, spooled):
        assert result.returncode == 1, result
        assert "no GPUs usable here" in result.stderr and "simulated:<preset>" in result.stderr
        assert "Traceback" not in result.stderr
    assert not connected
    assert not any((tmp_path / "spool").glob("**/*.json"))
    printed = peerwatch()  # only printing: the fallback, said on stderr
    assert printed.returncode == 0 and "simulated fabric" in printed.stderr
