"""`peerwatch drain`'s user errors and exit statuses, each a line naming what was wrong."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.probes.live_server import free_port


def drain(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "peerwatch.app.cli", "drain", *argv], env=env,
                          capture_output=True, text=True, timeout=120)


def down() -> str:
    return f"http://127.0.0.1:{free_port()}"


def test_a_bad_policy_names_its_key(tmp_path: Path) -> None:
    bad = tmp_path / "policy.yaml"
    bad.write_text("mode: act\nbreaker: {max_share: 0.5}\n")
    done = drain("--once", "--token", "t", "--policy", str(bad))
    assert done.returncode == 2
    assert done.stderr.strip() == (f"peerwatch drain: error: {bad}: breaker.max_share: "
                                   "unknown key (known: window, max_per_window, max_share_out)")
    missing = drain("--once", "--token", "t", "--policy", str(tmp_path / "nope.yaml"))
    assert missing.returncode == 2 and "No such file or directory" in missing.stderr


def test_acting_needs_the_admin_token() -> None:
    import os

    env = {k: v for k, v in os.environ.items() if k != "PEERWATCH_ADMIN_TOKEN"}
    done = drain("--once", "--server", down(), env=env)
    assert done.returncode == 2 and "no admin token" in done.stderr


def test_an_unreachable_server_fails_a_round_but_never_a_health_check_or_gate() -> None:
    url = down()
    once = drain("--once", "--token", "t", "--server", url, "--scheduler", "none")
    assert once.returncode == 1 and "cannot reach" in once.stderr
    health = drain("--health-check", "--node", "n1", "--token", "t", "--server", url,
                   "--scheduler", "none")
    assert health.returncode == 0 and "nothing done" in health.stderr
    gate = drain("--gate", "--node", "n1", "--token", "t", "--server", url,
                 "--scheduler", "none")
    assert gate.returncode == 75 and "could not judge n1" in gate.stderr


def test_kubernetes_without_a_configuration_is_one_line(tmp_path: Path) -> None:
    import os

    env = {**os.environ, "KUBECONFIG": str(tmp_path / "none"), "HOME": str(tmp_path)}
    env.pop("KUBERNETES_SERVICE_HOST", None)
    done = drain("--once", "--token", "t", "--server", down(), "--scheduler", "kubernetes",
                 env=env)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith("peerwatch drain: no Kubernetes configuration")
