"""The table of alert rules in docs/alerts.md, written from the rules' declarations.

Each rule says when it fires and which labels it carries where it is declared
(`Rule.doc`, `Rule.label_names`); the drain controller's alerts in `rules_drain.py`.
tests/deploy/test_prometheus_rules.py proves the committed table equal to `table()`.
"""

from __future__ import annotations

from collections.abc import Sequence

from peerwatch.app.alerting.rule import Rule
from peerwatch.app.alerting.rules import RULES
from peerwatch.app.alerting.rules_drain import DRAIN_DOCS, DRAIN_TWINS

BEGIN = ("<!-- The table is written by deploy/prometheus/write_rules.py from the rules' "
         "declarations (app/alerting/rules_*.py): do not edit. -->")
END = "<!-- End of the written table. -->"


def table(rules: Sequence[Rule] = RULES) -> str:
    lines = ["| alertname | severity | fires when | `for` | labels |", "|---|---|---|---|---|"]
    lines += [_row(r.name, r.severity, r.doc, _for(r.for_s), r.label_names) for r in rules]
    lines += [_row(a.name, a.severity, *DRAIN_DOCS[a.name][:1], "0", DRAIN_DOCS[a.name][1])
              for a in DRAIN_TWINS]
    return "\n".join(lines) + "\n"


def with_table(markdown: str, rules: Sequence[Rule] = RULES) -> str:
    """`markdown` with the text between BEGIN and END replaced by the table."""
    head, rest = markdown.split(BEGIN + "\n", 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n\n{table(rules)}\n{END}{tail}"


def _for(seconds: float) -> str:
    return f"{seconds:g} s" if seconds else "0"


def _row(*cells: str) -> str:
    name, *rest = (c.replace("|", "\\|") for c in cells)
    return f"| `{name}` | " + " | ".join(rest) + " |"
