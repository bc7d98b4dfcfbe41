"""What one simulated hgx8 agent posts at each of its report times, for bench/storage.py.

The reports are the fleet templates (`fleet_load.templates`: a real sweep and inventory
report of the simulated fabric) with the host, a fresh report id and the report's time put
in, and counters that behave like a real port's over time: every NVLink port's error
counters stay where the inventory template has them (a healthy fleet), and its tx/rx byte
counters grow at `BUSY_BPS` on a busy host (a training job's traffic) or stay put on an idle
one. Every sample of a report, the sweep's two included, is read at the report's time.

An agent that sends heartbeats (a tree with `probes/heartbeat.py`, issue 37) sends, as
`probes/agent/changes.py` decides for a host whose judged state never changes: every sweep
and a keyframe inventory every `KEYFRAME_S` in full, a heartbeat on the full report before
in place of every other inventory, and a full report at once when the server answers 409.

The templates are the tree's own (`tree_templates`): an older tree's probes build them in a
process of their own, so its server gets only the fields and test kinds its wire knows (a
tree before schema 5 has no NICs, and refused this tree's reports).
bench/storage.py posts these at spaced report times; bench/fleet.py (through
bench/helpers/fleet_load.py's `deliver`) at its compressed cadence, live.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import tempfile
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from bench.helpers.fleet_load import HOST_MARK, MARK_JSON, templates
from bench.helpers.serve import import_root
from peerwatch.probes.agent.changes import KEYFRAME_S
from peerwatch.probes.agent.sender import REPORTS_PATH
from peerwatch.probes.heartbeat import HEARTBEATS_PATH, Heartbeat

BUSY_BPS = 2e9  # bytes per second each way on each port of a busy host
LINKS_KEY = '"links":['


HERE = Path(__file__).resolve().parents[2]
# run in the tree's own interpreter path: its templates, marks and keyframe interval as JSON
TREE_SCRIPT = """
import json, sys
from bench.helpers import fleet_load as f
try:
    from peerwatch.probes.agent.changes import KEYFRAME_S
except ImportError:
    KEYFRAME_S = None
json.dump({"marks": [f.HOST_MARK, f.MARK_JSON], "keyframe_s": KEYFRAME_S,
           "kinds": {k: [t.json, t.report_id] for k, t in f.templates().items()}}, sys.stdout)
"""


@dataclass(frozen=True)
class TreeTemplates:
    """A tree's report templates (kind -> (JSON, its report id)), the host and time marks
    in them, and its agent's keyframe interval (None: it sends every report in full)."""

    kinds: dict[str, tuple[str, str]]
    host_mark: str
    mark_json: str
    keyframe_s: float | None

    def body(self, kind: str, text: str, host: str, at: datetime) -> str:
        """`text` (a `kind` template's JSON, counters put in) as `host` posts it at `at`."""
        when = at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        return (text.replace(self.kinds[kind][1], str(uuid.uuid4()), 1)
                .replace(self.host_mark, host, 1).replace(self.mark_json, when))


@functools.cache
def tree_templates(tree: Path) -> TreeTemplates:
    """`tree`'s templates: this checkout's in process, another's from its own code."""
    if tree.resolve() == HERE:
        kinds = {k: (t.json, t.report_id) for k, t in templates().items()}
        return TreeTemplates(kinds, HOST_MARK, MARK_JSON, KEYFRAME_S)
    with tempfile.TemporaryDirectory() as scratch:
        path = f"{import_root(tree, Path(scratch))}{os.pathsep}{tree}"
        done = subprocess.run([sys.executable, "-c", TREE_SCRIPT], cwd=tree,
                              env={**os.environ, "PYTHONPATH": path}, capture_output=True,
                              text=True, check=False)
    if done.returncode:
        raise RuntimeError(f"{tree}: its report templates failed: {done.stderr[-2000:]}")
    found = json.loads(done.stdout)
    kinds = {k: (text, rid) for k, (text, rid) in found["kinds"].items()}
    host_mark, mark_json = found["marks"]
    return TreeTemplates(kinds, host_mark, mark_json, found["keyframe_s"])


@functools.cache
def _shapes(tree: Path) -> tuple[dict[str, list[str]], list[dict[str, int]]]:
    """Each kind's JSON split where its samples' link lists go, and the ports' resting
    counters (from the inventory template), of `tree`'s templates."""
    kinds = tree_templates(tree).kinds
    parts = {}
    for kind, (text, _) in kinds.items():
        pieces, rest = [], text
        while (start := rest.find(LINKS_KEY)) >= 0:  # a port holds no list: its "]" ends it
            end = rest.index("]", start) + 1
            pieces.append(rest[:start + len(LINKS_KEY) - 1])
            rest = rest[end:]
        parts[kind] = [*pieces, rest]
    ports = json.loads(kinds["inventory"][0])["counters"][0]["links"]
    return parts, ports


class AgentWire:
    """One host's agent: `body(kind, at)` is the JSON it posts for its report at `at`.
    `keyframe_s`: the tree's agent's KEYFRAME_S unless given (shorter for a fleet on a
    compressed cadence)."""

    def __init__(self, tree: Path, host: str, busy: bool,
                 keyframe_s: float | None = None) -> None:
        self.tree, self.host, self.busy = tree, host, busy
        self.keyframe_s = (keyframe_s if keyframe_s is not None
                           else tree_templates(tree).keyframe_s or KEYFRAME_S)
        self._sent = 0
        self.heartbeats = (tree / "probes" / "heartbeat.py").exists()
        self._base: tuple[uuid.UUID, datetime] | None = None  # the newest full report: id, time

    def post_for(self, kind: str, at: datetime) -> tuple[str, str]:
        """(path, body) of what the agent posts for its report at `at`."""
        if (self.heartbeats and kind == "inventory" and self._base is not None
                and (at - self._base[1]).total_seconds() < self.keyframe_s):
            beat = Heartbeat(host=self.host, base_report_id=self._base[0], at=at)
            return HEARTBEATS_PATH, beat.model_dump_json()
        return REPORTS_PATH, self.full(kind, at)

    def full(self, kind: str, at: datetime) -> str:
        """The full report at `at`; heartbeats stand on it from now on (once taken)."""
        body = self.body(kind, at)
        if self.heartbeats:
            self._base = (uuid.UUID(json.loads(body)["report_id"]), at)
        return body

    def heartbeat(self) -> str:
        """A heartbeat on the newest full report (the agent's between two full ones)."""
        assert self._base is not None, "no full report sent yet"
        return Heartbeat(host=self.host, base_report_id=self._base[0],
                         at=self._base[1]).model_dump_json()

    def resync(self) -> None:
        """The server holds no full report of this host (409): the next goes in full."""
        self._base = None

    def links_json(self, at: datetime) -> str:
        _, ports = _shapes(self.tree)
        grown = int(BUSY_BPS * at.timestamp()) if self.busy else 0
        return json.dumps([{**p, "tx_bytes": p["tx_bytes"] + grown,
                            "rx_bytes": p["rx_bytes"] + grown} for p in ports],
                          separators=(",", ":"))

    def body(self, kind: str, at: datetime) -> str:
        parts, _ = _shapes(self.tree)
        self._sent += 1
        return tree_templates(self.tree).body(kind, self.links_json(at).join(parts[kind]),
                                              self.host, at)
