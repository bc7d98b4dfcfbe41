"""Count on-call pages the way the shipped Alertmanager configuration
(deploy/alertmanager/alertmanager.yml) groups alerts: each critical alert goes down the
route tree (first matching child, `continue: false`) and pages once per receiver and
`group_by` key. Only the matcher forms that file uses (`=`, `=~`) are understood; another
fails here rather than being read wrong."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

CONFIG = Path(__file__).resolve().parents[3] / "deploy" / "alertmanager" / "alertmanager.yml"
MATCHER = re.compile(r'\s*(\w+)\s*(=~|=)\s*"(.*)"\s*$')


def _matches(route: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    for m in route.get("matchers", []):
        found = MATCHER.fullmatch(m)
        if found is None:
            raise ValueError(f"matcher {m!r}: only `name = \"v\"` and `name =~ \"re\"` are read")
        name, op, value = found.groups()
        have = labels.get(name, "")
        if (have != value) if op == "=" else re.fullmatch(value, have) is None:
            return False
    return True


def group_key(labels: Mapping[str, str], config: Path = CONFIG) -> tuple[str, tuple[str, ...]]:
    """(receiver, group_by values) of the notification an alert with `labels` joins."""
    route = yaml.safe_load(config.read_text())["route"]
    receiver, group_by = route["receiver"], route["group_by"]
    for child in route.get("routes", []):
        if _matches(child, labels):
            receiver, group_by = child["receiver"], child.get("group_by", group_by)
            break
    return receiver, tuple(labels.get(k, "") for k in group_by)


def pages(alerts: Iterable[Mapping[str, str]]) -> int:
    """Critical notifications the alerts (their labels, severity included) make."""
    return len({group_key(a) for a in alerts if a.get("severity") == "critical"})
