"""Every user error is one line on stderr and a non-zero exit, for every command.

Run as a person would, in a fresh process (`python -m peerwatch.app.cli`), so nothing the test
runner
set up (logging, imported modules) can hide a traceback. The PostgreSQL cases use the real
server the suite uses (a database that does not exist there) and a port nothing listens on.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from peerwatch.probes.errors import FabricUnavailable
from peerwatch.probes.fabric_select import open_real
from tests.app.conftest import PG_PORT

REPO = Path(__file__).resolve().parents[2]


def peerwatch(*argv: str, env: dict[str, str] | None = None,
              cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "peerwatch.app.cli", *argv], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def assert_one_line_error(result: subprocess.CompletedProcess, *, status: int,
                          says: str) -> None:
    lines = result.stderr.strip().splitlines()
    assert result.returncode == status, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    assert lines and says in lines[-1], result.stderr
    if status != 2:  # argparse's usage errors print the usage line first
        assert len(lines) == 1, result.stderr


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again when the socket is


def test_bench_on_nvml_without_nvml_is_one_line() -> None:
    try:
        open_real().close()
        pytest.skip("NVML works on this machine")
    except FabricUnavailable:
        pass
    assert_one_line_error(peerwatch("bench", "--fabric", "nvml"), status=1, says="NVML")


@pytest.mark.parametrize("command", ["migrate", "serve"])
@pytest.mark.parametrize(("url", "says"), [
    ("postgresql://postgres@127.0.0.1:{closed}/test", "Connection refused"),
    ("postgresql://postgres@127.0.0.1:{pg_port}/peerwatch_no_such_db", "does not exist"),
    ("sqlite:////proc/peerwatch-no/such.db", "No such file or directory"),
])
def test_unusable_database_is_one_line(command: str, url: str, says: str) -> None:
    url = url.format(closed=closed_port(), pg_port=PG_PORT)
    argv = [command, "--database-url", url]
    if command == "serve":  # a port of its own: the default 8000 may be taken (another test)
        argv += ["--no-local-probe", "--port", str(closed_port())]
    assert_one_line_error(peerwatch(*argv), status=1, says=says)


@pytest.mark.parametrize("command", ["migrate", "serve", "judge"])
@pytest.mark.parametrize(("url", "says"), [
    ("nonsense", "--database-url='nonsense': no scheme://; use sqlite:///PATH or "
                 "postgresql+psycopg://USER:PASSWORD@HOST:PORT/DB"),
    ("mysql://root:hunter2@db/pw", "--database-url='mysql://root:***@db/pw': 'mysql' is not "
                                   "supported; use sqlite:///PATH or postgresql+psycopg://"),
])
def test_unsupported_database_is_one_line_naming_what_is_accepted(command: str, url: str,
                                                                  says: str) -> None:
    argv = [command, "--database-url", url, *(["--no-local-probe"] if command == "serve"
                                              else [])]
    result = peerwatch(*argv)
    assert_one_line_error(result, status=2, says=f"peerwatch {command}: error: {says}")
    assert len(result.stderr.splitlines()) == 1 and "hunter2" not in result.stderr


@pytest.mark.parametrize(("argv", "says"), [
    (["drain", "--interval", "-1"], "argument --interval: '-1' is not a number > 0"),
    (["drain", "--interval", "0"], "argument --interval: '0' is not a number > 0"),
    (["drain", "--interval", "nan"], "argument --interval: 'nan' is not a number > 0"),
    (["drain", "--timeout", "-1"], "argument --timeout: '-1' is not a number > 0"),
    (["drain", "--timeout", "soon"], "argument --timeout: 'soon' is not a number > 0"),
    (["drain", "--dry-run", "--node", "a/b"], "argument --node: host name 'a/b' breaks the rule"),
    (["drain", "--dry-run", "--node", "node-1\nstate=resume"], "argument --node: host name"),
    (["demo", "--hosts", "0"], "argument --hosts: '0' is not an integer > 0"),
    (["demo", "--racks", "-1"], "argument --racks: '-1' is not an integer >= 0"),
    (["demo", "--backfill-hours", "-2"], "argument --backfill-hours: '-2' is not a number >= 0"),
    (["judge", "--wake-fd", "-3"], "argument --wake-fd: '-3' is not an integer >= 0"),
])
def test_a_number_out_of_range_is_argparse_usage_error(argv: list[str], says: str) -> None:
    result = peerwatch(*argv)
    assert_one_line_error(result, status=2, says=says)
    assert result.stderr.splitlines()[-1].startswith(f"peerwatch {argv[0]}: error: ")


@pytest.mark.parametrize("command", ["serve", "demo"])
@pytest.mark.parametrize("port", ["70000", "0", "http"])
def test_bad_port_is_a_usage_error(command: str, port: str) -> None:
    assert_one_line_error(peerwatch(command, "--port", port), status=2, says="--port")


def test_json_into_a_closed_pipe_ends_quietly_like_other_tools() -> None:
    """`peerwatch bench --json | head -c 10`: the reader leaves early; no BrokenPipeError."""
    cmd = f"{sys.executable} -m peerwatch.app.cli bench --fabric simulated:hgx8 --json | head -c 10"
    result = subprocess.run(["bash", "-c", f"{cmd}; exit ${{PIPESTATUS[0]}}"], cwd=REPO,
                            capture_output=True, text=True, timeout=120)
    assert result.stdout == '{\n "schema'
    assert result.stderr == ""
    assert result.returncode == 141  # 128 + SIGPIPE, what a shell reports for `cat`


def test_tables_into_a_closed_pipe_end_quietly() -> None:
    """The tables go through rich, which quietly ends with status 1 on a closed pipe (0 when
    the whole output fitted in the pipe before `head` left: a race this test allows)."""
    cmd = f"{sys.executable} -m peerwatch.app.cli bench --fabric simulated:hgx8 | head -n 1"
    result = subprocess.run(["bash", "-c", f"{cmd}; exit ${{PIPESTATUS[0]}}"], cwd=REPO,
                            capture_output=True, text=True, timeout=120)
    assert result.stdout.startswith("sim-hgx8")
    assert result.stderr == "" and result.returncode in (0, 1)


def test_serve_on_a_busy_port_is_one_line() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = peerwatch("serve", "--port", str(port), "--no-local-probe")
    assert_one_line_error(result, status=1, says=f"port {port} on 127.0.0.1 is already in use")


@pytest.mark.parametrize(("host", "says"), [
    ("no-such-host.invalid", "does not resolve"),
    ("192.0.2.1", "cannot listen on 192.0.2.1"),  # TEST-NET-1: no machine has it
])
def test_serve_on_a_bad_host_is_one_line(host: str, says: str) -> None:
    assert_one_line_error(peerwatch("serve", "--host", host, "--port", str(closed_port()),
                                    "--no-local-probe"), status=1, says=says)
