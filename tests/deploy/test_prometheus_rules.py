"""The PromQL rules, their unit tests and the Alertmanager example, run by the real tools.

`promtool` (Debian's `prometheus` package) and `amtool` (`prometheus-alertmanager`) are
required in CI: a missing binary fails the run there instead of skipping it.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import yaml

from app.alerting.rules import RULE_NAMES
from tests.conftest import require

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
RULES = DEPLOY / "prometheus" / "peerwatch-rules.yml"
RULE_TESTS = DEPLOY / "prometheus" / "peerwatch-rules.test.yml"
ALERTMANAGER_CONFIG = DEPLOY / "alertmanager" / "alertmanager.yml"

SERVER_RULES = set(RULE_NAMES)


def _tool(name: str) -> str:
    path = shutil.which(name) or (f"/usr/bin/{name}" if Path(f"/usr/bin/{name}").exists() else None)
    require(path is not None, name)
    assert path is not None
    return path


def _run(*argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=60)


def test_rules_file_is_valid() -> None:
    done = _run(_tool("promtool"), "check", "rules", str(RULES))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS: 8 rules found" in done.stdout


def test_rule_unit_tests_pass() -> None:
    done = _run(_tool("promtool"), "test", "rules", RULE_TESTS.name, cwd=RULE_TESTS.parent)
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_server_rule_has_a_promql_twin_and_a_unit_test() -> None:
    names = {r["alert"] for g in yaml.safe_load(RULES.read_text())["groups"] for r in g["rules"]}
    assert names == SERVER_RULES
    tested = {
        case["alertname"]
        for t in yaml.safe_load(RULE_TESTS.read_text())["tests"]
        for case in t.get("alert_rule_test", [])
        if case.get("exp_alerts")
    }
    assert tested == SERVER_RULES


def test_a_broken_rule_is_caught(tmp_path: Path) -> None:
    """The check above can fail: promtool rejects a rule with bad PromQL."""
    bad = tmp_path / "bad.yml"
    bad.write_text("groups:\n- name: x\n  rules:\n  - alert: X\n    expr: rate(foo[5m]\n")
    done = _run(_tool("promtool"), "check", "rules", str(bad))
    assert done.returncode != 0


def test_alertmanager_example_config_is_valid() -> None:
    done = _run(_tool("amtool"), "check-config", str(ALERTMANAGER_CONFIG))
    assert done.returncode == 0, done.stdout + done.stderr


def test_compose_prometheus_config_is_valid(tmp_path: Path) -> None:
    """deploy/prometheus/prometheus.yml as the compose stack mounts it, checked by promtool."""
    config = (DEPLOY / "prometheus" / "prometheus.yml").read_text()
    rules = tmp_path / "peerwatch-rules.yml"
    rules.write_text(RULES.read_text())
    (tmp_path / "prometheus.yml").write_text(
        config.replace("/etc/prometheus/peerwatch-rules.yml", str(rules)))
    done = _run(_tool("promtool"), "check", "config", str(tmp_path / "prometheus.yml"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout
