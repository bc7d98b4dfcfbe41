"""The PromQL rules, their unit tests and the Alertmanager example, run by the real tools.

`promtool` (Debian's `prometheus` package) and `amtool` (`prometheus-alertmanager`) are
required in CI: a missing binary fails the run there instead of skipping it.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import yaml

from peerwatch.app.alerting.promql import series_read
from peerwatch.app.alerting.promql_records import BASELINES, SHARED
from peerwatch.app.alerting.rules import RULE_NAMES
from peerwatch.app.alerting.rules import RULES as SERVER_RULE_DECLARATIONS
from peerwatch.app.alerting.rules_drain import DRAIN_TWINS
from peerwatch.app.alerting.rules_file import render
from peerwatch.app.alerting.rules_table import with_table
from peerwatch.app.analysis.xid_catalog import P2P_XIDS
from peerwatch.app.services.drain import DRAIN_ALERTS
from tests.conftest import require

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
RULES = DEPLOY / "prometheus" / "peerwatch-rules.yml"
RULE_TESTS = DEPLOY / "prometheus" / "peerwatch-rules.test.yml"
ALERTMANAGER_CONFIG = DEPLOY / "alertmanager" / "alertmanager.yml"
ALERTS_DOC = DEPLOY.parent / "docs" / "alerts.md"

SERVER_RULES = set(RULE_NAMES) | DRAIN_ALERTS  # the drain controller's, written with its actions


# promtool's rule tests take seconds on a quiet machine and over a minute beside a loaded
# CI run (they timed out at 60 s once): a limit for a hang, not a speed test
PROMTOOL_LIMIT_S = 600


def _tool(name: str) -> str:
    path = shutil.which(name) or (f"/usr/bin/{name}" if Path(f"/usr/bin/{name}").exists() else None)
    require(path is not None, name)
    assert path is not None
    return path


def _run(*argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True,
                          timeout=PROMTOOL_LIMIT_S)


def test_rules_file_is_valid() -> None:
    done = _run(_tool("promtool"), "check", "rules", str(RULES))
    assert done.returncode == 0, done.stdout + done.stderr
    # promtool loads every rule the file holds: the declarations' alerting and recording
    # rules (the file equals what they render: test_the_rules_file_is_written_from_the_declarations)
    count = sum(len(g["rules"]) for g in yaml.safe_load(RULES.read_text())["groups"])
    assert count >= 44, count  # 28 alerting + 16 recording when the declarations were written
    assert f"SUCCESS: {count} rules found" in done.stdout


def test_rule_unit_tests_pass() -> None:
    done = _run(_tool("promtool"), "test", "rules", RULE_TESTS.name, cwd=RULE_TESTS.parent)
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_server_rule_has_a_promql_twin_and_a_unit_test() -> None:
    names = {r["alert"] for g in yaml.safe_load(RULES.read_text())["groups"]
             for r in g["rules"] if "alert" in r}
    assert names == SERVER_RULES
    tested = {
        case["alertname"]
        for t in yaml.safe_load(RULE_TESTS.read_text())["tests"]
        for case in t.get("alert_rule_test", [])
        if case.get("exp_alerts")
    }
    assert tested == SERVER_RULES


def test_the_rules_file_is_written_from_the_declarations() -> None:
    """Each rule's twins are declared with its check (app/alerting/rules_*.py); the committed
    file is what they write, so a twin is changed in one place."""
    assert RULES.read_text() == render(), (
        "deploy/prometheus/peerwatch-rules.yml is stale or edited by hand: "
        "run `python deploy/prometheus/write_rules.py`")


def test_the_docs_table_of_rules_is_written_from_the_declarations() -> None:
    """docs/alerts.md lists every rule, when it fires and its labels, as declared."""
    doc = ALERTS_DOC.read_text()
    assert doc == with_table(doc), (
        "the table of docs/alerts.md is stale or edited by hand: "
        "run `python deploy/prometheus/write_rules.py`")
    for rule in SERVER_RULE_DECLARATIONS:
        assert rule.doc and rule.label_names, rule.name


def test_every_server_rule_declares_a_twin_and_the_series_it_reads() -> None:
    """`Rule.series` names exactly the /metrics series its twins read, themselves or
    through the recording rules they read."""
    records = (*BASELINES, *SHARED)
    for rule in SERVER_RULE_DECLARATIONS:
        assert rule.twins, rule.name
        read = frozenset().union(*(series_read(t.expr, records) for t in rule.twins))
        assert set(rule.series) == read, rule.name
    assert {a.name for a in DRAIN_TWINS} == DRAIN_ALERTS


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
    done = _check_config(tmp_path, (DEPLOY / "prometheus" / "prometheus.yml").read_text())
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


def _check_config(tmp_path: Path, config: str) -> subprocess.CompletedProcess[str]:
    rules = tmp_path / "peerwatch-rules.yml"
    rules.write_text(RULES.read_text())
    (tmp_path / "prometheus.yml").write_text(
        config.replace("/etc/prometheus/peerwatch-rules.yml", str(rules)))
    return _run(_tool("promtool"), "check", "config", str(tmp_path / "prometheus.yml"))


def test_the_commented_kubernetes_example_is_valid_too(tmp_path: Path) -> None:
    """Uncommented, it parses; Debian's promtool is built without Kubernetes discovery, so
    the `kubernetes_sd_configs` block is swapped for a static target and promtool checks
    the rest (the relabelling regexes, the job)."""
    config = (DEPLOY / "prometheus" / "prometheus.yml").read_text()
    start = config.index("  # - job_name: peerwatch-probe")
    example = "\n".join(line.replace("  # ", "  ", 1) for line in config[start:].splitlines())
    example = example.replace("job_name: peerwatch-probe", "job_name: peerwatch-k8s")
    job = yaml.safe_load(example)[0]
    assert job["kubernetes_sd_configs"] == [{"role": "pod", "namespaces": {"names": ["peerwatch"]}}]
    sd = "    kubernetes_sd_configs:\n      - role: pod\n        namespaces: {names: [peerwatch]}\n"
    assert sd in example + "\n"
    example = (example + "\n").replace(sd, "    static_configs: [{targets: ['node-1:9402']}]\n")
    done = _check_config(tmp_path, config[:start] + example)
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_probe_serves_metrics_where_prometheus_looks() -> None:
    """The compose probes' --metrics-port is in the static job; the DaemonSet's port, its
    container port and its scrape annotation agree."""
    scrape = yaml.safe_load((DEPLOY / "prometheus" / "prometheus.yml").read_text())
    job = next(j for j in scrape["scrape_configs"] if j["job_name"] == "peerwatch-probe")
    targets = set(job["static_configs"][0]["targets"])
    compose = yaml.safe_load((DEPLOY.parent / "docker-compose.yml").read_text())["services"]
    for name, svc in compose.items():
        command = [str(a) for a in svc.get("command", [])]
        if command[:1] == ["probe"] and "profiles" not in svc:
            port = command[command.index("--metrics-port") + 1]
            assert f"{name}:{port}" in targets, name
    docs = list(yaml.safe_load_all((DEPLOY / "k8s" / "probe-daemonset.yaml").read_text()))
    pod = next(d for d in docs if d["kind"] == "DaemonSet")["spec"]["template"]
    container = pod["spec"]["containers"][0]
    port = container["args"][container["args"].index("--metrics-port") + 1]
    assert pod["metadata"]["annotations"]["prometheus.io/port"] == port
    assert container["ports"] == [{"containerPort": int(port), "name": "metrics"}]


PAIR_RULES = {"P2PBandwidthDegraded", "P2PBelowFleetPeers"}
BOTH_ENDS = ("unless on (host, gpu) peerwatch:gpu_fault_explains_pairs",
             'unless on (host, peer_gpu)\n  label_replace(peerwatch:gpu_fault_explains_pairs, '
             '"peer_gpu", "$1", "gpu", "(.*)")',
             "unless on (host, gpu, peer_gpu, test) peerwatch:p2p_test_explained_by_pcie",
             # a pair page held while a GPU pattern forms, as on the server
             "unless on (host, gpu, peer_gpu) peerwatch:pair_page_held")


def _reads(expr: str, recorded: dict[str, str]) -> str:
    """The expression with every recording rule it reads, and theirs, in full."""
    out, seen = expr, set()
    while names := {n for n in recorded if n in out and n not in seen}:
        seen |= names
        out += " " + " ".join(recorded[n] for n in sorted(names))
    return out


def test_every_pair_rule_leaves_out_what_a_fault_of_either_end_explains() -> None:
    """The pair rules carry the explained-by clause themselves, for the sending and the
    receiving GPU, instead of relying on Alertmanager inhibition timing:
    in the alert's expression or in the recording rules it reads."""
    every = [r for g in yaml.safe_load(RULES.read_text())["groups"] for r in g["rules"]]
    recorded = {r["record"]: r["expr"] for r in every if "record" in r}
    rules = [r for r in every if r.get("alert") in PAIR_RULES]
    assert {r["alert"] for r in rules} == PAIR_RULES
    assert len(rules) == 3  # P2PBandwidthDegraded: sustained and intermittent
    for rule in rules:
        expr = " ".join(_reads(rule["expr"], recorded).split())
        for clause in BOTH_ENDS:
            assert " ".join(clause.split()) in expr, (rule["alert"], clause)


def test_every_pair_rule_pages_once_per_unordered_pair() -> None:
    """One page per pair, as on the server: each pair rule aggregates by the
    pair's labels, which the recording rules it reads take from the agent's
    `peerwatch_p2p_pair_info` (the low index as `gpu`)."""
    every = [r for g in yaml.safe_load(RULES.read_text())["groups"] for r in g["rules"]]
    recorded = {r["record"]: r["expr"] for r in every if "record" in r}
    for rule in (r for r in every if r.get("alert") in PAIR_RULES):
        expr = " ".join(_reads(rule["expr"], recorded).split())
        assert "group_left (pair) peerwatch:p2p_pair" in expr, rule["alert"]
        assert "peerwatch_p2p_pair_info" in expr, rule["alert"]
        assert '"gpu", "$1", "pair", "([0-9]+)-[0-9]+"' in expr, rule["alert"]
        assert " ".join(rule["expr"].split()).startswith(
            ("min by (host, gpu, peer_gpu) (peerwatch:p2p_pair_test_",
             "max by (host, gpu, peer_gpu) (peerwatch:p2p_pair_test_")), rule["alert"]
        assert "for" not in rule or rule["for"] == "0m", rule["alert"]


def test_the_xid_classes_that_explain_pairs_are_the_catalogs() -> None:
    """The recording rule's Xid regex lists exactly the catalog's `p2p` classes, so a pair
    the server explains by an Xid (app/analysis/xid_attribution.py) pages in neither."""
    rules = {r.get("record"): r for g in yaml.safe_load(RULES.read_text())["groups"]
             for r in g["rules"]}
    expr = rules["peerwatch:gpu_fault_explains_pairs"]["expr"]
    (codes,) = re.findall(r'xid=~"xid\(([\d|]+)\)"', expr)
    assert {int(c) for c in codes.split("|")} == P2P_XIDS
