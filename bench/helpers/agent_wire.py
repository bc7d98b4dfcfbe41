"""What one simulated hgx8 agent posts at each of its report times, for bench/storage.py.

The reports are the fleet templates (`fleet_load.templates`: a real sweep and inventory
report of the simulated fabric) with the host, a fresh report id and the report's time put
in, and counters that behave like a real port's over time: every NVLink port's error
counters stay where the inventory template has them (a healthy fleet), and its tx/rx byte
counters grow at `BUSY_BPS` on a busy host (a training job's traffic) or stay put on an idle
one. Every sample of a report, the sweep's two included, is read at the report's time.
"""

from __future__ import annotations

import functools
import json
from datetime import datetime
from pathlib import Path

from bench.helpers.fleet_load import Template, templates

BUSY_BPS = 2e9  # bytes per second each way on each port of a busy host
LINKS_KEY = '"links":['


@functools.cache
def _shapes() -> tuple[dict[str, list[str]], list[dict[str, int]]]:
    """Each kind's JSON split where its samples' link lists go, and the ports' resting
    counters (from the inventory template)."""
    parts = {}
    for kind, tpl in _templates().items():
        pieces, rest = [], tpl.json
        while (start := rest.find(LINKS_KEY)) >= 0:  # a port holds no list: its "]" ends it
            end = rest.index("]", start) + 1
            pieces.append(rest[:start + len(LINKS_KEY) - 1])
            rest = rest[end:]
        parts[kind] = [*pieces, rest]
    ports = json.loads(_templates()["inventory"].json)["counters"][0]["links"]
    return parts, ports


@functools.cache
def _templates() -> dict[str, Template]:
    return templates()


class AgentWire:
    """One host's agent: `body(kind, at)` is the JSON it posts for its report at `at`."""

    def __init__(self, tree: Path, host: str, busy: bool) -> None:
        self.tree, self.host, self.busy = tree, host, busy
        self._sent = 0

    def links_json(self, at: datetime) -> str:
        _, ports = _shapes()
        grown = int(BUSY_BPS * at.timestamp()) if self.busy else 0
        return json.dumps([{**p, "tx_bytes": p["tx_bytes"] + grown,
                            "rx_bytes": p["rx_bytes"] + grown} for p in ports],
                          separators=(",", ":"))

    def body(self, kind: str, at: datetime) -> str:
        parts, _ = _shapes()
        text = self.links_json(at).join(parts[kind])
        tpl = _templates()[kind]
        self._sent += 1
        return Template(kind, text, tpl.report_id, tpl.rows, tpl.report).body(self.host, at)
