"""`peerwatch drain`'s user errors and exit statuses, each a line naming what was wrong."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.probes.live_server import free_port

CREDENTIALS = {"PEERWATCH_DRAIN_TOKEN": "t", "PEERWATCH_GATE_TOKEN": "t"}


def drain(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`peerwatch drain` with a (wrong) credential in the environment, as a unit's would be."""
    env = {**os.environ, **CREDENTIALS} if env is None else env
    return subprocess.run([sys.executable, "-m", "peerwatch.app.cli", "drain", *argv], env=env,
                          capture_output=True, text=True, timeout=120)


def down() -> str:
    return f"http://127.0.0.1:{free_port()}"


def test_a_bad_policy_names_its_key(tmp_path: Path) -> None:
    bad = tmp_path / "policy.yaml"
    bad.write_text("mode: act\nbreaker: {max_share: 0.5}\n")
    done = drain("--once", "--policy", str(bad))
    assert done.returncode == 2
    assert done.stderr.strip() == (f"peerwatch drain: error: {bad}: breaker.max_share: "
                                   "unknown key (known: window, max_per_window, max_share_out, "
                                   "lost_grace)")
    missing = drain("--once", "--policy", str(tmp_path / "nope.yaml"))
    assert missing.returncode == 2 and "No such file or directory" in missing.stderr


def test_acting_needs_a_credential_never_on_the_command_line(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in CREDENTIALS}
    done = drain("--once", "--server", down(), env=env)
    assert done.returncode == 2 and done.stderr.strip() == (
        "peerwatch drain: error: no credential: /etc/peerwatch/drain-token does not exist "
        "(set PEERWATCH_DRAIN_TOKEN or pass --token-file; `peerwatch token issue` makes one)")
    done = drain("--once", "--server", down(), "--token", "secret")
    assert done.returncode == 2 and "--token: a credential on the command line" in done.stderr
    assert "secret" not in done.stderr
    empty = tmp_path / "drain-token"
    empty.write_text("\n")
    done = drain("--once", "--server", down(), "--token-file", str(empty), env=env)
    assert done.returncode == 2 and f"credential file {empty} is empty" in done.stderr


def test_an_unreachable_server_fails_a_round_but_never_a_health_check_or_gate() -> None:
    url = down()
    once = drain("--once", "--server", url, "--scheduler", "none")
    assert once.returncode == 1 and "cannot reach" in once.stderr
    health = drain("--health-check", "--node", "n1", "--server", url,
                   "--scheduler", "none")
    assert health.returncode == 0 and "nothing done" in health.stderr
    gate = drain("--gate", "--node", "n1", "--server", url,
                 "--scheduler", "none")
    assert gate.returncode == 75 and "could not judge n1" in gate.stderr


def test_kubernetes_without_a_configuration_is_one_line(tmp_path: Path) -> None:

    env = {**os.environ, **CREDENTIALS, "KUBECONFIG": str(tmp_path / "none"),
           "HOME": str(tmp_path)}
    env.pop("KUBERNETES_SERVICE_HOST", None)
    done = drain("--once", "--server", down(), "--scheduler", "kubernetes",
                 env=env)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith("peerwatch drain: no Kubernetes configuration")
