"""Write deploy/prometheus/peerwatch-rules.yml from the rules' declarations, and the kustomize
PrometheusRule from it.

Each server rule declares its PromQL twins beside its check (app/alerting/rules_*.py);
tests/deploy/test_prometheus_rules.py fails when the committed file differs from what this
writes. Run: `python deploy/prometheus/write_rules.py`.
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

from peerwatch.app.alerting.rules_file import render

DEPLOY = Path(__file__).resolve().parents[1]
OUTPUT = DEPLOY / "prometheus" / "peerwatch-rules.yml"
KUSTOMIZE = DEPLOY / "kustomize" / "prometheusrule.py"


def main() -> int:
    OUTPUT.write_text(render())
    print(f"wrote {OUTPUT.relative_to(DEPLOY.parent)}")
    return int(runpy.run_path(str(KUSTOMIZE))["main"]())


if __name__ == "__main__":
    sys.exit(main())
