"""`peerwatch probe`: --once against a real server, exit statuses, help, and SIGTERM."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from peerwatch.app.cli import build_parser, main
from peerwatch.app.cli.commands.probe import settings_from
from peerwatch.probes.config import ProbeSettings
from peerwatch.probes.report import Report
from tests.conftest import SETTLE_S
from tests.probes.live_server import (
    TOKEN,
    free_port,
    host_credential,
    live_server,
    server_settings,
    stored,
)


def token_file(directory: Path, token: str = TOKEN) -> str:
    """A credential file as a host keeps one: readable by its owner only."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "probe-token"
    path.write_text(token + "\n")
    path.chmod(0o600)
    return str(path)


def once(spool: Path, url: str, token: str = TOKEN, *extra: str) -> list[str]:
    """`probe --once` at the default request timeout (10 s): a first report, judged with
    its fleet peers on a loaded CI machine, can outlast a short one."""
    return ["probe", "--once", "--fabric", "simulated:h200x2", "--server", url,
            "--token-file", token_file(spool.parent, token), "--spool-dir", str(spool),
            "--request-timeout", "10", *extra]


def test_once_delivers_and_prints_what_the_sweep_cost(tmp_path: Path, capsys) -> None:
    settings = server_settings(tmp_path / "server", tokens=())  # host-bound credentials only
    credential = host_credential(settings, "gpu-a")
    with live_server(settings) as server:
        status = main(once(tmp_path / "spool", server.url, credential, "--hostname", "GPU-A"))
    out = capsys.readouterr().out
    assert status == 0, out
    assert re.search(r"sweep GPU time \d+\.\d+ s", out)
    assert re.search(r"agent memory \(RSS\) \d+\.\d MiB", out)
    assert "delivered to http://127.0.0.1" in out and "HTTP 201" in out
    report_id = re.search(r"sweep report ([0-9a-f-]{36})", out)
    assert report_id and [str(i) for i in stored(settings).report_ids] == [report_id[1]]


def test_once_with_the_server_down_spools_and_exits_0(tmp_path: Path, capsys) -> None:
    status = main(once(tmp_path / "spool", f"http://127.0.0.1:{free_port()}"))
    out = capsys.readouterr().out
    assert status == 0 and "kept in the spool" in out
    assert len(list((tmp_path / "spool").glob("*.json"))) == 1


def test_once_with_a_wrong_token_exits_3_and_keeps_the_report(tmp_path: Path, capsys) -> None:
    settings = server_settings(tmp_path / "server")
    with live_server(settings) as server:
        status = main(once(tmp_path / "spool", server.url, "wrong"))
    captured = capsys.readouterr()
    assert status == 3
    assert "HTTP 403: the bearer token is not a valid probe credential" in captured.out
    assert len(list((tmp_path / "spool").glob("*.json"))) == 1 and stored(settings).report_ids == []


@pytest.mark.parametrize(("args", "message"), [
    (["--token-file", "/nonexistent/probe-token"],
     "no credential: /nonexistent/probe-token does not exist (set PEERWATCH_PROBE_TOKEN or "
     "pass --token-file"),
    (["--sweep-interval", "-5"], "--sweep-interval='-5.0': expected a number > 0"),
    (["--server", "127.0.0.1:8000"], "must start with http:// or https://"),
    (["--fabric", "simulated:dgx1"], "unknown"),
])
def test_bad_options_are_one_line_usage_errors(tmp_path: Path, capsys, monkeypatch,
                                               args: list[str], message: str) -> None:
    monkeypatch.delenv("PEERWATCH_PROBE_TOKEN", raising=False)
    monkeypatch.setenv("PEERWATCH_PROBE_TOKEN_FILE", token_file(tmp_path))
    status = main(["probe", "--once", "--spool-dir", str(tmp_path), *args])
    err = capsys.readouterr().err
    assert status == 2 and message in err and err.count("\n") == 1


def test_a_credential_on_the_command_line_is_refused(capsys) -> None:
    """Every local user reads a process's argv in /proc: the option is gone, and its old
    spelling says where a credential goes instead, without echoing it."""
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["probe", "--once", "--token", "s3cret"])
    err = capsys.readouterr().err
    assert exited.value.code == 2 and "s3cret" not in err
    assert "--token: a credential on the command line is readable by every local user" in err


def test_environment_configures_and_the_command_line_wins(tmp_path: Path, monkeypatch) -> None:
    from peerwatch.app.cli.commands.probe import settings_from

    monkeypatch.setenv("PEERWATCH_PROBE_TOKEN", "from-env")
    monkeypatch.setenv("PEERWATCH_PROBE_SWEEP_INTERVAL_S", "42")
    args = build_parser().parse_args(["probe", "--sweep-interval", "7"])
    settings = settings_from(args)
    assert settings.token == "from-env" and settings.sweep_interval_s == 7


def test_nvls_is_off_unless_the_operator_opts_in(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("PEERWATCH_PROBE_TOKEN", "t")
    assert settings_from(build_parser().parse_args(["probe"])).nvls is False
    assert settings_from(build_parser().parse_args(["probe", "--nvls"])).nvls is True
    monkeypatch.setenv("PEERWATCH_PROBE_NVLS", "true")
    assert settings_from(build_parser().parse_args(["probe"])).nvls is True


def test_every_option_states_its_default() -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    probe = sub.choices["probe"]  # type: ignore[attr-defined]
    for action in probe._actions:
        if action.dest not in ("help", "token"):  # --token: refused, never shown
            assert "(default:" in (action.help or ""), action.option_strings


def _hanging_server() -> socket.socket:
    """A socket that listens but never answers: requests time out, as to a wedged server."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    return sock


def test_sigterm_ends_a_running_probe_cleanly_with_reports_spooled(tmp_path: Path) -> None:
    spool = tmp_path / "spool"
    with _hanging_server() as hang:
        url = f"http://127.0.0.1:{hang.getsockname()[1]}"
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        proc = subprocess.Popen(
            [sys.executable, "-m", "peerwatch.app.cli", "probe", "--fabric", "simulated:mesh4",
             "--server", url, "--token-file", token_file(tmp_path), "--spool-dir", str(spool),
             "--inventory-interval", "0.3", "--sweep-interval", "1", "--sweep-jitter", "0",
             "--request-timeout", "1"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        try:
            deadline = time.monotonic() + SETTLE_S
            while len(list(spool.glob("*.json"))) < 3 and time.monotonic() < deadline:
                time.sleep(0.1)
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=15)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    assert proc.returncode == 0, err
    assert "SIGTERM received: stopping" in err
    files = sorted(spool.glob("*.json"))
    assert len(files) >= 3 and f"{len(files)} report(s) in {spool}" in err
    kinds = {Report.model_validate_json(f.read_bytes()).kind for f in files}
    assert kinds == {"inventory", "sweep"}
    assert not list(spool.glob(".tmp-*"))


def test_auto_without_gpus_refuses_instead_of_reporting_simulated_data(tmp_path: Path,
                                                                        capsys) -> None:
    from peerwatch.probes.errors import FabricUnavailable
    from peerwatch.probes.fabric_select import open_real

    try:
        open_real().close()
        pytest.skip("this machine has usable GPUs")
    except FabricUnavailable:
        pass
    status = main(["probe", "--once", "--fabric", "auto", "--token-file", token_file(tmp_path),
                   "--spool-dir", str(tmp_path), "--server", f"http://127.0.0.1:{free_port()}"])
    err = capsys.readouterr().err
    assert status == 1 and "no GPUs usable here" in err and "--fabric simulated:" in err
    assert not list(tmp_path.glob("*.json"))


def test_a_spool_owned_by_another_probe_is_refused(tmp_path: Path, capsys) -> None:
    from peerwatch.probes.agent.spool import Spool

    with Spool(tmp_path, 1 << 20):
        status = main(once(tmp_path, f"http://127.0.0.1:{free_port()}"))
    assert status == 1 and "in use by another probe" in capsys.readouterr().err


def test_once_delivers_the_backlog_first(tmp_path: Path, capsys) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    assert main(once(tmp_path / "spool", url)) == 0
    assert main(once(tmp_path / "spool", url)) == 0  # both kept: nobody listens yet
    settings = server_settings(tmp_path / "server")
    with live_server(settings, port=port):
        status = main(once(tmp_path / "spool", url))
    out = capsys.readouterr().out
    assert status == 0 and out.count("kept in the spool") == 2 and "delivered to" in out
    assert len(stored(settings).report_ids) == 3
    assert not list((tmp_path / "spool").glob("*.json"))


def test_every_probe_setting_is_an_option() -> None:
    """Each `PEERWATCH_PROBE_*` setting can be given on the command line too."""
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    probe = sub.choices["probe"]  # type: ignore[attr-defined]
    options = {a.dest for a in probe._actions}
    fields = set(ProbeSettings.model_fields) - {"token"}  # a secret: environment or file only
    assert fields <= options, fields - options
    text = probe.format_help()
    for shown in ("(default: 5.0; env PEERWATCH_PROBE_BACKOFF_INITIAL_S)",
                  "(default: 300.0; env PEERWATCH_PROBE_BACKOFF_MAX_S)",
                  "(default: 0.0.0.0; env PEERWATCH_PROBE_METRICS_ADDR)"):
        assert shown in " ".join(text.split()), text


def test_new_options_reach_the_settings(tmp_path: Path) -> None:
    args = build_parser().parse_args([
        "probe", "--token-file", token_file(tmp_path), "--spool-dir", str(tmp_path),
        "--backoff-initial", "2",
        "--backoff-max", "9", "--metrics-addr", "127.0.0.1",
        "--metrics-tests", "ce_write,latency"])
    settings = settings_from(args)
    assert (settings.backoff_initial_s, settings.backoff_max_s) == (2.0, 9.0)
    assert settings.metrics_addr == "127.0.0.1"
    assert [t.value for t in settings.metrics_tests] == ["ce_write", "latency"]
