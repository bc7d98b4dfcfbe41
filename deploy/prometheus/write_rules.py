"""Write deploy/prometheus/peerwatch-rules.yml and the table of docs/alerts.md from the rules'
declarations, and the kustomize PrometheusRule from the rules file.

Each server rule declares its PromQL twins beside its check (app/alerting/rules_*.py);
tests/deploy/test_prometheus_rules.py fails when the committed file or table differs from
what this writes. Run: `python deploy/prometheus/write_rules.py`.
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

from peerwatch.app.alerting.rules_file import render
from peerwatch.app.alerting.rules_table import with_table

DEPLOY = Path(__file__).resolve().parents[1]
OUTPUT = DEPLOY / "prometheus" / "peerwatch-rules.yml"
KUSTOMIZE = DEPLOY / "kustomize" / "prometheusrule.py"
DOCS = DEPLOY.parent / "docs" / "alerts.md"


def main() -> int:
    OUTPUT.write_text(render())
    DOCS.write_text(with_table(DOCS.read_text()))
    print(f"wrote {OUTPUT.relative_to(DEPLOY.parent)}, the table of "
          f"{DOCS.relative_to(DEPLOY.parent)}")
    return int(runpy.run_path(str(KUSTOMIZE))["main"]())


if __name__ == "__main__":
    sys.exit(main())
