"""What the probe agent itself costs a host, what the spool costs, and how fast the demo's
history is made, on the simulated presets (CPU only).

1. Agent CPU per pass (build the report and stamp its cost; the fabric is simulated, so the
   transfer tests themselves cost nothing here: on real GPUs their GPU time is reported in
   `cost.gpu_time_s`), as an average duty cycle of one core with the default schedule
   (inventory every 30 s, a sweep every 600 s). Reference: an agent on a GPU node should stay
   under 1% of one core.
2. Spool: writing one hgx8 sweep report (fsync, rename, fsync of the directory) and reading
   it back. Reference: the 30 s inventory interval.
3. The demo's backfill: a day of history for one host of each preset, generated and ingested
   through the server's ingest service on SQLite. Reference: real time (24 h).

CPU time (`time.process_time`) is used where it is the agent's own cost, so a busy machine
does not inflate it; the spool and backfill figures are wall time (disk and database).
"""

from __future__ import annotations

import functools
import tempfile
import time
from pathlib import Path

from bench.helpers.size import sized
from bench.helpers.timing import median_ms
from peerwatch.app.demo.backfill import Backfill, BackfillPlan
from peerwatch.app.demo.fleet import plan_fleet
from peerwatch.app.demo.scenario import default_scenario
from peerwatch.app.judging.sessions import make_sessionmaker
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.db import make_engine, upgrade_to_head
from peerwatch.probes.agent.passes import report_builder
from peerwatch.probes.agent.spool import Spool
from peerwatch.probes.config import ProbeSettings
from peerwatch.probes.report import ReportKind, utcnow
from peerwatch.probes.sim.simulated import SimulatedFabric

PRESETS = ("h200x2", "hgx8", "mesh4", "pcie4")
INVENTORY_S, SWEEP_S = 30.0, 600.0
REPEATS = sized(3, 1)
BACKFILL_S = sized(86_400.0, 7_200.0)  # a day of history; 2 h at smoke size


def agent_duty_cycle() -> None:
    print("agent CPU per pass (median of 3), duty cycle with inventory/30 s + sweep/600 s;"
          " reference: 1% of one core")
    for preset in PRESETS:
        build = report_builder(SimulatedFabric(preset), ProbeSettings(token="bench"))
        cpu_ms = functools.partial(median_ms, repeat=REPEATS, clock=time.process_time)
        inventory_ms = cpu_ms(functools.partial(build, ReportKind.INVENTORY))
        sweep_ms = cpu_ms(functools.partial(build, ReportKind.SWEEP))
        per_sweep_period = inventory_ms * (SWEEP_S / INVENTORY_S - 1) + sweep_ms
        duty = per_sweep_period / (SWEEP_S * 1000)
        print(f"  {preset:7s} inventory {inventory_ms:7.1f} ms, sweep {sweep_ms:7.1f} ms "
              f"-> {duty:.4%} of a core = {duty / 0.01:.3f} x the 1% reference")


def spool_cost() -> None:
    report = report_builder(SimulatedFabric("hgx8"), ProbeSettings(token="bench"))(
        ReportKind.SWEEP)
    size = len(report.model_dump_json())
    with tempfile.TemporaryDirectory() as tmp, Spool(Path(tmp), 1 << 30) as spool:
        start = time.perf_counter()
        entries = [spool.put(report) for _ in range(20)]
        put_ms = (time.perf_counter() - start) * 1000 / 20
        start = time.perf_counter()
        for entry in entries:
            assert entry is not None and spool.load(entry) is not None
        load_ms = (time.perf_counter() - start) * 1000 / 20
    print(f"spool, one hgx8 sweep report ({size / 1024:.0f} KiB): write {put_ms:.1f} ms, "
          f"read back {load_ms:.1f} ms = {(put_ms + load_ms) / (INVENTORY_S * 1000):.5f} x "
          "the 30 s inventory interval")


def backfill_speed() -> None:
    fleet = plan_fleet(len(PRESETS))
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(database_url=f"sqlite:///{tmp}/bench.db", data_dir=Path(tmp))
        engine = make_engine(settings)
        upgrade_to_head(engine)
        plan = BackfillPlan(span_s=BACKFILL_S, pause_s=0.0)
        backfill = Backfill(fleet, default_scenario(fleet), make_sessionmaker(engine),
                            settings, utcnow(), plan)
        stats = backfill.run()
        engine.dispose()
    speedup = backfill.plan.span_s / stats.seconds
    print(f"demo backfill, {BACKFILL_S / 3600:g} h for {len(fleet)} hosts "
          f"({', '.join(PRESETS)}): "
          f"{stats.reports} reports, {stats.measurements} measurements in {stats.seconds:.1f} s"
          f" = {stats.reports / stats.seconds:.1f} reports/s, {speedup:,.0f} x real time")


def main() -> int:
    agent_duty_cycle()
    spool_cost()
    backfill_speed()
    return 0


if __name__ == "__main__":
    from bench.helpers.cli import no_options

    no_options(__doc__, __file__)
    raise SystemExit(main())
