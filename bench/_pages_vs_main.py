"""Pages per simulated fault, main against this tree (issue 38's before -> after).

    python -m bench._pages_vs_main [REF]     # REF: the git ref to compare with, main

For each fault, the same history (three healthy sweeps, then the fault, reports every 30 s
and a sweep every 5 min for 18 min; the rack: its 18 compute trays) runs through each tree's
own ingest, judgement and rules on a fresh SQLite database; every alert ever pending or
firing is counted, and so are the notifications the tree's deploy/alertmanager/alertmanager.yml
would send (its route and `group_by`, `tests/app/alerting/pages.py`'s reading where the tree
has it). REF's tree is `git archive`d to a temporary directory and run there with
PYTHONPATH pointing `peerwatch` at it. Not run by `make bench` (a leading underscore).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _cases() -> dict[str, Any]:
    """name -> (preset, hosts, driver(host)), built from the tree that runs this."""
    from peerwatch.probes.sim import faults as F

    board = [F.LinksDown(gpu=g, links=(2, 3)) for g in range(8)] + [
        F.SwitchSxid(switch=0, sxid=20034, fatal=True),
        F.FabricUnhealthy(health="limited_capacity", issues=("degraded_bandwidth",))]
    slow = [F.BandwidthFactor(src=3, dst=p, factor=0.9) for p in range(8) if p != 3]
    return {"NVSwitch lost, HGX board (SXid 20034, links 2-3 of 8 GPUs, limited capacity)":
            ("hgx8", 1, board),
            "switch tray 4 lost, NVL72 rack (18 trays)": ("nvl72", 18, [F.SwitchTrayLost(tray=4)]),
            "Xid 79, event and GPU gone in one report": ("hgx8", 1, [F.GpuLost(gpu=4)]),
            "Xid 79, event on a report still listing the GPU": ("hgx8", 1, "event-first"),
            "GPU3 10 % slow with every peer": ("hgx8", 1, slow),
            "GPU7 gone before the agent saw it, fresh server, 8 expected": ("hgx8", 1, "count")}


def run_here() -> dict[str, Any]:
    """Every case through this tree: {case: {alerts (their labels), rules}}."""
    from sqlalchemy.orm import sessionmaker

    from peerwatch.app.ingest.rows import ingest
    from peerwatch.app.judging.sessions import make_sessionmaker
    from peerwatch.app.runtime.config import Settings
    from peerwatch.app.store.db import make_engine, upgrade_to_head
    from peerwatch.probes.report import ReportKind
    from peerwatch.probes.sim import faults as F
    from peerwatch.probes.sweep import build_report
    from tests.app.alerting.simhost import SimHost

    out = {}
    for name, (preset, n, what) in _cases().items():
        tmp = Path(tempfile.mkdtemp())
        settings = Settings(database_url=f"sqlite:///{tmp / 'p.db'}", data_dir=tmp)
        engine = make_engine(settings)
        upgrade_to_head(engine)
        sessions: sessionmaker[Any] = make_sessionmaker(engine)
        hosts = [SimHost(sessions, settings, preset=preset, hostname=f"{preset}-{i:02d}")
                 for i in range(n)]
        if what == "count":  # the fault before the first report; the count where it exists
            h = hosts[0]
            h.inject(F.GpuLost(gpu=7, on_pci=False))
            if "expected_gpus" in SimHost.__dataclass_fields__:
                h.expected_gpus = 8
        else:
            for _ in range(3):
                for h in hosts:
                    h.step(300, "sweep")
            for h in hosts:
                if what == "event-first":
                    h.advance(30)
                    report = build_report(h.fabric, ReportKind.INVENTORY, h.options, now=h.now)
                    h.inject(F.GpuLost(gpu=4))
                    report = report.model_copy(
                        update={"events": h.fabric.drain_events(report.started_at)})
                    with h.sessions() as s:
                        ingest(s, report, h.settings, h.now())
                    h.evaluate()
                else:
                    h.inject(*what)
        seen: dict[tuple[str, tuple[tuple[str, str], ...]], dict[str, str]] = {}
        for i in range(37 if n == 1 else 9):
            for h in hosts:
                if i:  # the first look: what the fault's own report raised
                    h.step(30, "sweep" if i % 10 == 0 else "inventory")
                for a in h.alerts("pending") + h.alerts("firing"):
                    seen[(a.rule, tuple(sorted(a.labels.items())))] = dict(a.labels)
        rules: dict[str, int] = {}
        for rule, _ in seen:
            rules[rule] = rules.get(rule, 0) + 1
        out[name] = {"alerts": list(seen.values()), "rules": rules}
        engine.dispose()
    return out


def _counted(found: dict[str, Any], tree: Path) -> dict[str, Any]:
    """Critical alerts, critical pages and all notifications by the tree's own
    deploy/alertmanager/alertmanager.yml (`tests/app/alerting/pages.py`'s reading)."""
    from tests.app.alerting.pages import group_key

    config = tree / "deploy" / "alertmanager" / "alertmanager.yml"
    for case in found.values():
        alerts = case.pop("alerts")
        critical = [a for a in alerts if a["severity"] == "critical"]
        case["critical"] = len(critical)
        case["pages"] = len({group_key(a, config) for a in critical})
        case["notifications"] = len({group_key(a, config) for a in alerts})
    return found


def _in_tree(tree: Path) -> dict[str, Any]:
    pkg = Path(tempfile.mkdtemp())
    (pkg / "peerwatch").symlink_to(tree)
    env = {**os.environ, "PYTHONPATH": f"{pkg}:{tree}", "PYTHONWARNINGS": "ignore"}
    done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--here"], cwd=tree,
                          env=env, capture_output=True, text=True, check=True)
    return _counted(json.loads(done.stdout.strip().splitlines()[-1]), tree)


def main(ref: str = "main") -> int:
    with tempfile.TemporaryDirectory() as tmp:
        old = Path(tmp) / "tree"
        old.mkdir()
        archive = subprocess.run(["git", "archive", ref], cwd=ROOT, capture_output=True,
                                 check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(old)], input=archive, check=True)
        before = _in_tree(old)
    after = _in_tree(ROOT)
    for name in after:
        b, a = before[name], after[name]
        print(f"{name}:\n  critical alerts {b['critical']} -> {a['critical']}, critical pages "
              f"{b['pages']} -> {a['pages']}, all notifications {b['notifications']} -> "
              f"{a['notifications']}\n  {ref}: {b['rules']}\n  here: {a['rules']}")
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--here"]:
        print(json.dumps(run_here()))
    else:
        raise SystemExit(main(*sys.argv[1:2]))
