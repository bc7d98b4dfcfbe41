"""The GPUDirect RDMA loopback (probes/nvidia/gdr.py) against a hand-written stand-in for
perftest's `ib_write_bw` (none is installed here, and no RDMA NIC): the command it runs, the
figure it reads from perftest's table, and each way it fails, said in words."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from peerwatch.probes.errors import NotSupported, TransferError
from peerwatch.probes.nvidia.gdr import Loopback, parse_gbits, run_loopback

# What perftest prints with --report_gbits (its header and result row; values made up)
TABLE = """\
---------------------------------------------------------------------------------------
 #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
 8388608    48               392.51             391.87               0.005839
---------------------------------------------------------------------------------------
"""


def fake_tool(tmp_path: Path, body: str) -> str:
    """An executable `ib_write_bw` stand-in: the server (no host argument) exits at once;
    the client runs `body` with its arguments logged to args.log."""
    path = tmp_path / "ib_write_bw"
    path.write_text("#!/bin/sh\n"
                    f'echo "$@" >> "{tmp_path}/args.log"\n'
                    'case "$*" in *localhost*) ;; *) exit 0 ;; esac\n' + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def loop(tool: str) -> Loopback:
    return Loopback("mlx5_0", 3, 8 << 20, 48, tool=tool, timeout_s=60)


def test_the_client_average_is_the_figure(tmp_path: Path) -> None:
    tool = fake_tool(tmp_path, f"cat <<'EOF'\n{TABLE}EOF\n")
    m = run_loopback(loop(tool))
    assert m.samples == [pytest.approx(391.87e9 / 8)]
    # server and client start side by side, so either may log first
    args = sorted((tmp_path / "args.log").read_text().splitlines())
    server = "-d mlx5_0 --use_cuda=3 -s 8388608 -n 48 --report_gbits -F -p 18515"
    assert args == [server, server + " localhost"]


def test_perftest_without_cuda_is_not_supported(tmp_path: Path) -> None:
    tool = fake_tool(tmp_path, "echo \"ib_write_bw: unrecognized option '--use_cuda=3'\"; exit 1\n")
    with pytest.raises(NotSupported, match="unrecognized option '--use_cuda"):
        run_loopback(loop(tool))


def test_a_failing_client_says_how(tmp_path: Path) -> None:
    tool = fake_tool(tmp_path, "echo 'Failed to modify QP to RTR'; exit 1\n")
    with pytest.raises(TransferError, match="exited 1: Failed to modify QP to RTR"):
        run_loopback(loop(tool))


def test_no_perftest_is_not_supported() -> None:
    with pytest.raises(NotSupported, match="not installed"):
        run_loopback(loop("peerwatch-no-such-ib_write_bw"))


def test_a_table_without_a_row_is_an_error() -> None:
    assert parse_gbits(TABLE) == 391.87
    with pytest.raises(TransferError, match="no result row"):
        parse_gbits(" #bytes #iterations BW peak\n")



def test_a_client_refused_before_the_server_listens_dials_again(tmp_path: Path) -> None:
    """perftest's server prints no ready line: the client is refused until it listens, and is
    dialled again rather than after a guessed wait (the server here listens once the
    client has been refused twice)."""
    path = tmp_path / "ib_write_bw"
    ready, tries = tmp_path / "listening", tmp_path / "tries"
    path.write_text(
        "#!/bin/sh\n"
        'case "$*" in *localhost*) ;; *)\n'
        f'  while [ ! -f "{ready}" ]; do\n'
        f'    [ "$(wc -l < "{tries}" 2>/dev/null || echo 0)" -ge 2 ] && touch "{ready}"\n'
        "    sleep 0.02; done; sleep 2; exit 0 ;; esac\n"
        f'if [ ! -f "{ready}" ]; then echo x >> "{tries}"; '
        "echo \"Couldn't connect to localhost:18515\"; exit 1; fi\n"
        f"cat <<'EOF'\n{TABLE}EOF\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    m = run_loopback(loop(str(path)))
    assert m.samples == [pytest.approx(391.87e9 / 8)]
    assert len((tmp_path / "tries").read_text().splitlines()) >= 2
