"""One simulated history, read by the server and by Prometheus: the harness of
`test_promql_equals_server.py`.

A `TwinHost` drives a `SimHost` (the server's real ingest, judgement and rules at a fake
clock) and, at every step, records what Prometheus would scrape at that moment: the probe
agent's exporter (`probes/agent/metrics.py`, fed the same reports as the server, each carrying the
Xid/SXid events the faults logged since the last, as the agent's report builder adds them)
and the server's `/metrics` (`app/exposition/collector.py`, read from the same database, its event
findings judged at the fake clock: the wall clock would find every simulated event older
than the look-back). `promtool_test` writes those scrapes as a promtool unit test over
deploy/prometheus/peerwatch-rules.yml whose expected result is the set of alerts the
server has firing at the end, by name and object (an Xid page's switch and number too); promtool
evaluates the rules over the history exactly as a Prometheus server would (rule groups
every minute, `for`, ALERTS), and says what differs.

Why generated promtool tests rather than a real Prometheus scraping a live agent: the same
history is deterministic (fake clock, seeded fabric), takes seconds instead of the 20+ min
of wall time the rules' `for` and windows need, and runs the real rule engine all the same.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import yaml
from prometheus_client.core import Metric
from sqlalchemy.orm import Session, sessionmaker

from peerwatch.app.alerting.settings import AlertingSettings
from peerwatch.app.exposition.collector import PeerwatchCollector
from peerwatch.app.exposition.loader import load_snapshot
from peerwatch.app.ingest.rows import ingest
from peerwatch.app.runtime.config import Settings
from peerwatch.probes.agent.agent_state import AgentState
from peerwatch.probes.agent.metrics import AgentCollector
from peerwatch.probes.report import ReportKind, TestName
from peerwatch.probes.sim.faults import Fault
from peerwatch.probes.sweep import SweepOptions
from tests.app.alerting.simhost import QUICK, SimHost

RULES = Path(__file__).resolve().parents[3] / "deploy" / "prometheus" / "peerwatch-rules.yml"
STEP_S = 60  # one report (and one scrape of each target) a minute; sweeps every 10th
OBJECT = ("alertname", "host", "gpu", "peer_gpu", "nic", "link", "switch", "xid")  # what an alert
# is about (an Xid page is one per object and event number)
# The quick tests and the staged copy: a downtrained PCIe link slows those (the pair pages
# Prometheus once raised before PCIeLinkDowntrained).
TESTS = SweepOptions(tests=(*QUICK.tests, TestName.STAGED))
SeriesKey = tuple[str, tuple[tuple[str, str], ...]]
Alerted = frozenset[tuple[str, str]]  # one alert: its OBJECT labels that are set


def peer_is_gpu_rules() -> frozenset[str]:
    """The PromQL alerts that carry `peer_gpu` equal to their `gpu` (for Alertmanager's
    inhibition): the server's twins of them carry no `peer_gpu`."""
    groups = yaml.safe_load(RULES.read_text())["groups"]
    return frozenset(r["alert"] for g in groups for r in g["rules"]
                     if r.get("labels", {}).get("peer_gpu") == "{{ $labels.gpu }}")


PEER_IS_GPU = peer_is_gpu_rules()


def alert_object(labels: dict[str, str], peer_is_gpu: frozenset[str]) -> Alerted:
    """An alert's identity for comparing both sides: its name and the object it names."""
    found = {k: v for k, v in labels.items() if k in OBJECT and v}
    if labels["alertname"] in peer_is_gpu and "gpu" in found:
        found.setdefault("peer_gpu", found["gpu"])
    return frozenset(found.items())


@dataclass
class TwinHost:
    """A simulated host whose every step is ingested by the server and scraped twice."""

    sessions: sessionmaker[Session]
    settings: Settings
    preset: str = "h200x2"
    steps: int = 0
    probe_ahead_s: float = 0.0  # the probe's clock against the server's (negative: behind)
    tests: SweepOptions = TESTS  # what each sweep runs
    series: dict[SeriesKey, dict[int, float]] = field(default_factory=dict)
    firing: dict[int, set[Alerted]] = field(default_factory=dict)  # the server's, per step
    intermittent: dict[int, set[Alerted]] = field(default_factory=dict)  # ... of those, the
    # ones firing for an intermittent pattern (the words of the server's verdict say which)

    def __post_init__(self) -> None:
        self.sim = SimHost(self.sessions, self.settings, preset=self.preset,
                           alerting=AlertingSettings(alert_eval_interval_s=0), options=self.tests)
        self.agent = AgentState()

    @property
    def name(self) -> str:
        return self.sim.hostname

    def inject(self, fault: Fault) -> None:
        self.sim.inject(fault)

    def run(self, minutes: int) -> None:
        """`minutes` steps: a report each (a sweep every 10th), the server's judgement and
        rules after it, then both scrapes."""
        for _ in range(minutes):
            self.sim.advance(STEP_S)
            self.steps += 1
            kind = ReportKind.SWEEP if self.steps % 10 == 0 else ReportKind.INVENTORY
            report = self.sim.build(kind, now=self.probe_now)  # with the faults' events
            with self.sessions() as session:
                ingest(session, report, self.settings, self.sim.now(), sent_at=self.probe_now())
            self.agent.record(report)
            self.sim.evaluate()
            self.firing[self.steps] = self.server_firing()
            self.intermittent[self.steps] = self.server_firing(intermittent=True)
            self._scrape()

    def probe_now(self) -> datetime:
        return self.sim.now() + timedelta(seconds=self.probe_ahead_s)

    def _scrape(self) -> None:
        agent = AgentCollector(self.agent).host_families(self.agent.view())
        with self.sessions() as session:
            snap = load_snapshot(session)
        server = PeerwatchCollector(lambda gpus: snap, AlertingSettings()).collect()
        self._keep(agent, "agent-sim:9400")
        self._keep(server, "server:8000")

    def _keep(self, families: Any, instance: str) -> None:
        fam: Metric
        for fam in families:
            for s in fam.samples:
                if s.name.endswith("_created"):
                    continue
                value = float(s.value)
                if s.name.endswith("_timestamp_seconds"):
                    value -= self.sim.start.timestamp()  # promtool's clock starts at 0
                labels = tuple(sorted({**s.labels, "instance": instance}.items()))
                self.series.setdefault((s.name, labels), {})[self.steps] = value

    def server_firing(self, intermittent: bool = False) -> set[Alerted]:
        return {alert_object({**a.labels, "alertname": a.rule}, PEER_IS_GPU)
                for a in self.sim.alerts("firing")
                if not intermittent or "(intermittent)" in a.annotations["description"]}

    def now(self) -> datetime:
        return self.sim.now()


def _values(points: dict[int, float], steps: int) -> str:
    """promtool's value notation, runs folded: `5x3` is four 5s, `_x3` three blanks (no
    sample). A series gone from a scrape is marked `stale` there, as Prometheus marks it on
    the first scrape without it (else promtool's 5-min look-back would keep it present)."""
    seq: list[float | str | None] = [points.get(i) for i in range(0, steps + 1)]
    for i in range(1, len(seq)):
        if seq[i] is None and isinstance(seq[i - 1], float):
            seq[i] = "stale"
    out: list[str] = []
    i = 0
    while i < len(seq):
        j = i
        while j + 1 < len(seq) and seq[j + 1] == seq[i]:
            j += 1
        if seq[i] is None:  # `_xN` is N blanks, where `5xN` is N+1 fives
            out.append("_" if j == i else f"_x{j - i + 1}")
        elif isinstance(seq[i], str):
            out.append(str(seq[i]))
        else:
            out.append(f"{seq[i]:.17g}" if j == i else f"{seq[i]:.17g}x{j - i}")
        i = j + 1
    return " ".join(out)


def _selector(key: SeriesKey) -> str:
    name, labels = key
    inner = ",".join(f'{k}="{v}"' for k, v in labels)
    return f"{name}{{{inner}}}"


def _firing_test(step: int, expected: set[Alerted]) -> dict[str, Any]:
    samples = [{"labels": "{" + ", ".join(f'{k}="{v}"' for k, v in sorted(a)) + "}",
                "value": 1} for a in sorted(expected, key=sorted)]
    return {"expr": f'group by ({", ".join(OBJECT)}) (ALERTS{{alertstate="firing"}})',
            "eval_time": f"{step * STEP_S}s", "exp_samples": samples}


def promtool_group(host: TwinHost, name: str, expected: dict[int, set[Alerted]]
                   ) -> dict[str, Any]:
    """One promtool test group: the host's scrapes, and the firing alerts expected at the
    given steps (by name and object)."""
    return {
        "name": name, "interval": f"{STEP_S}s",
        "input_series": [{"series": _selector(k), "values": _values(v, host.steps)}
                         for k, v in sorted(host.series.items())],
        "promql_expr_test": [_firing_test(step, alerts)
                             for step, alerts in sorted(expected.items())],
    }


def write_promtool_test(path: Path, groups: list[dict[str, Any]]) -> None:
    path.write_text(yaml.safe_dump({"rule_files": [str(RULES)], "evaluation_interval": "1m",
                                    "tests": groups}, sort_keys=False, width=1 << 20))
