"""Reading deploy/grafana/peerwatch-fabric.json the way Grafana does, for the tests.

Grafana is not installable here (no Debian or PyPI package), so the tests read the JSON
themselves: its panels (rows nest theirs when collapsed), each target's PromQL, and the
expression Grafana would send with the dashboard's variables set to what they stand for.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DASHBOARD = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "peerwatch-fabric.json"


@dataclass(frozen=True)
class Target:
    panel: str
    ref: str
    expr: str

    def promql(self, host: str, rate_interval: str) -> str:
        """The query with `$host` (a regex: All is `.+`) and `$__rate_interval` filled in."""
        return (self.expr.replace("$__rate_interval", rate_interval)
                .replace("${host}", host).replace("$host", host))


def load(path: Path = DASHBOARD) -> dict[str, Any]:
    dashboard: dict[str, Any] = json.loads(path.read_text())
    return dashboard


def panels(dashboard: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for panel in dashboard["panels"]:
        yield panel
        yield from panel.get("panels", [])


def targets(dashboard: dict[str, Any]) -> list[Target]:
    return [Target(p["title"], t["refId"], t["expr"])
            for p in panels(dashboard) if p["type"] != "row" for t in p["targets"]]


def variable(dashboard: dict[str, Any], name: str) -> dict[str, Any]:
    found = [v for v in dashboard["templating"]["list"] if v["name"] == name]
    assert found, f"the dashboard has no `{name}` variable"
    return found[0]
