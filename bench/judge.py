"""Judge once, read many: what judging a host costs, and what reading its stored state costs
against judging it on every read (what every read did before verdicts were stored).

One simulated `hgx8` host (8 x H200 behind NVSwitch) with 3 hours of history at the probe's
real cadence (a sweep every 10 min, an inventory + counter report every 30 s) is ingested
through the server's ingest service, on SQLite and PostgreSQL (throwaway database; skipped
with a message when unreachable). Then, medians over repeats:
- judge + store + alert rules after a sweep (pair tests judged from their history) and
  after an inventory report (stored pair-test verdicts reused): the work the server now does
  once per report;
- reading the stored state (`host_health`: what /health, /matrix, /topology and placement
  read) against judging from history (`judge_host_now`, the old cost of every such read).
"""

from __future__ import annotations

import statistics
import time
import uuid
from datetime import timedelta

from bench.helpers.size import sized
from bench.helpers.timing import median_ms
from bench.ingest import postgres_url, sqlite_url
from peerwatch.app.alerting.settings import AlertingSettings
from peerwatch.app.ingest.rows import ingest
from peerwatch.app.judging.judge import judge_host_now
from peerwatch.app.judging.service import AlertingService
from peerwatch.app.judging.sessions import make_sessionmaker
from peerwatch.app.queries.health import host_health
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.db import make_engine, upgrade_to_head
from peerwatch.app.store.tables.inventory import Host
from peerwatch.probes.report import ReportKind, utcnow
from peerwatch.probes.sim.simulated import SimulatedFabric
from peerwatch.probes.sweep import SweepOptions, build_report

HOST = "bench-judge-hgx8"
STEPS = sized(360, 24)  # 3 h of 30 s steps (12 min at smoke size)
SWEEP_EVERY = 20  # steps: 10 min


def bench_backend(name: str, url: str) -> None:
    settings = Settings(database_url=url)
    engine = make_engine(settings)
    upgrade_to_head(engine)
    sessions = make_sessionmaker(engine)
    service = AlertingService(sessions, settings, AlertingSettings())
    fabric = SimulatedFabric("hgx8", seed=3, hostname=HOST)
    start = utcnow() - timedelta(hours=3)
    clock = [start]
    after: dict[ReportKind, list[float]] = {ReportKind.SWEEP: [], ReportKind.INVENTORY: []}
    for step in range(STEPS):
        clock[0] = start + timedelta(seconds=30 * step)
        kind = ReportKind.SWEEP if step % SWEEP_EVERY == 0 else ReportKind.INVENTORY
        report = build_report(fabric, kind, options=SweepOptions(timeout_s=None),
                              now=lambda: clock[0])
        received = clock[0] + timedelta(seconds=1)
        with sessions() as session:
            ingest(session, report.model_copy(update={"report_id": uuid.uuid4()}), settings,
                   received)
        t = time.perf_counter()
        service.evaluate_host(HOST, received)
        after[kind].append((time.perf_counter() - t) * 1000)
    with sessions() as session:
        row = session.query(Host).filter_by(name=HOST).one()
        read = median_ms(lambda: host_health(session, settings, row), 7)
        judge = median_ms(lambda: judge_host_now(session, settings, row, clock[0]), 7)
    engine.dispose()
    sweep = statistics.median(after[ReportKind.SWEEP][-6:])
    inventory = statistics.median(after[ReportKind.INVENTORY][-60:])
    print(f"  {name}: judge + store + rules after a sweep       {sweep:7.1f} ms")
    print(f"  {name}: judge + store + rules after an inventory  {inventory:7.1f} ms")
    print(f"  {name}: read the stored state {read:6.1f} ms vs judge on read {judge:6.1f} ms "
          f"= {read / judge:.2f} of the old cost of every read")


def main() -> int:
    print(f"one hgx8 host, {STEPS * 30 / 3600:g} h of history at the real cadence")
    with sqlite_url() as url:
        bench_backend("sqlite", url)
    with postgres_url() as url:
        if url is not None:
            bench_backend("postgresql", url)
    return 0


if __name__ == "__main__":
    from bench.helpers.cli import no_options

    no_options(__doc__, __file__)
    raise SystemExit(main())
