"""deploy/prometheus/peerwatch-rules.yml, written from the rules' declarations.

The file is committed (Prometheus, promtool and the kustomize PrometheusRule read it), and
tests/deploy/test_prometheus_rules.py proves it equal to `render()`: a rule's twin changes
in its family module, and `python deploy/prometheus/write_rules.py` writes the file again.
"""

from __future__ import annotations

from collections.abc import Sequence

from peerwatch.app.alerting.promql import Group, PromAlert, rules_file
from peerwatch.app.alerting.promql_records import BASELINE_COMMENT, BASELINES, SHARED
from peerwatch.app.alerting.rule import Rule
from peerwatch.app.alerting.rules import RULES
from peerwatch.app.alerting.rules_drain import DRAIN_TWINS

HEADER = (
    "peerwatch alerting rules for teams that alert in Prometheus itself. Written by "
    "deploy/prometheus/write_rules.py from each rule's declaration (app/alerting/rules_*.py): "
    "do not edit.\n"
    "\n"
    "They are the server's own rules (app/alerting/rules.py, docs/alerts.md) in PromQL, with "
    "the same names and default thresholds, over two kinds of scrape target:\n"
    "- the probe agents (`peerwatch probe --metrics-port`, one per GPU node): per-link, "
    "per-GPU and per-pair series;\n"
    "- the server's /metrics: the stored verdicts, the inventory, the server-clock receive "
    "time, the fabric contradictions, pair faults, throttled GPUs and fleet peers it judged, "
    "and what `peerwatch drain` did; `max by` there, so that scraping several server "
    "replicas pages once.\n"
    "Each rule reads the series its declaration names (`Rule.series`). Unit tests: "
    "peerwatch-rules.test.yml (`promtool test rules peerwatch-rules.test.yml`).\n"
    "\n"
    "Lifetime error counters are judged by their increase, never by their value: a healthy "
    "idle H200 reads CRC/ECC data counts of 5-20 per link forever, and that must never page "
    "anyone. The `dashboard` annotation is a path on the peerwatch server; prefix it with its "
    "URL.\n"
    "\n"
    "One fault, one page: pair alerts are one per unordered pair (`gpu` < `peer_gpu`, each "
    "direction's low tests listed in the description) and leave out, themselves, the pairs a "
    "link/GPU/PCIe fault at either end explains (the explaining conditions are recorded "
    "below, read as they stand, so no `for` lets a pair page out first). The link/GPU/PCIe "
    "alerts also carry `peer_gpu` equal to their `gpu`, so that Alertmanager mutes the "
    "server's own pair alerts on either end too (the two inhibit rules of "
    "deploy/alertmanager/alertmanager.yml: `equal: [host, gpu]` and `equal: [host, "
    "peer_gpu]`)."
)


def alerts(rules: Sequence[Rule] = RULES) -> tuple[PromAlert, ...]:
    """Every twin of every rule, in the rules' order, then the drain controller's."""
    return (*(PromAlert(r.name, r.severity, t) for r in rules for t in r.twins), *DRAIN_TWINS)


def groups(rules: Sequence[Rule] = RULES) -> tuple[Group, ...]:
    return (Group("peerwatch-baselines", BASELINES, interval="5m", comment=BASELINE_COMMENT),
            Group("peerwatch", (*SHARED, *alerts(rules))))


def render(rules: Sequence[Rule] = RULES) -> str:
    return rules_file(HEADER, groups(rules))
