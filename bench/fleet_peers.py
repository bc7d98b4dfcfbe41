"""Fleet peers at 1000 hgx8 hosts: what recomputing the peer distributions costs the leader's
periodic round, and what judging a host against them adds to a host judgement.

One simulated `hgx8` host (8 x H200 behind NVSwitch, 56 pairs) is ingested and judged
through the server's own services (8 sweeps, 10 min apart: its baselines exist); its
inventory and judged state are then copied to 999 more hosts (values scattered by +-1 %,
one host 9 % slow), 392,000 judged (pair, test) rows in all, on PostgreSQL (throwaway
database; skipped with a message when unreachable) and SQLite. Medians over repeats:
- the recompute (`refresh_fleet_peers`: one scan of the judged state, group, store),
  against the reference: judging one host after a sweep (`judge_host_now` from history);
- the peer checks one judgement adds (`host_peer_checks`: a few stored rows, then pure
  code), against judging the host after an inventory report (stored tests reused) and after
  a sweep;
- the judgement's fast path (a healthy host with nothing new), which the peers add no read
  to: the recompute stamps the hosts whose peers changed.
"""

from __future__ import annotations

import random
import uuid
from datetime import timedelta
from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.orm import Session

from bench.helpers.size import sized
from bench.helpers.timing import median_ms
from bench.ingest import postgres_url, sqlite_url
from peerwatch.app.alerting.settings import AlertingSettings
from peerwatch.app.ingest.rows import ingest
from peerwatch.app.judging.judge import Prior, judge_host_now
from peerwatch.app.judging.service import AlertingService
from peerwatch.app.judging.sessions import make_sessionmaker
from peerwatch.app.judging.store import judge_and_store
from peerwatch.app.queries.fabric import load_fabric
from peerwatch.app.queries.health import stored_rows, tests_from_rows
from peerwatch.app.runtime.config import Settings
from peerwatch.app.services.fleet_peers import host_peer_checks
from peerwatch.app.store.db import make_engine, upgrade_to_head
from peerwatch.app.store.tables.inventory import Gpu, Host, Pair
from peerwatch.app.store.tables.judged import JudgedTest
from peerwatch.probes.report import ReportKind, utcnow
from peerwatch.probes.sim.simulated import SimulatedFabric
from peerwatch.probes.sweep import SweepOptions, build_report

HOSTS = sized(1000, 4)
REF = "bench-peers-0000"
SWEEPS = sized(8, 2)


def _reference_host(sessions: Any, settings: Settings) -> Any:
    service = AlertingService(sessions, settings, AlertingSettings())
    fabric = SimulatedFabric("hgx8", seed=3, hostname=REF)
    now = [utcnow() - timedelta(minutes=10 * SWEEPS)]
    for _ in range(SWEEPS):
        now[0] += timedelta(minutes=10)
        report = build_report(fabric, ReportKind.SWEEP, options=SweepOptions(timeout_s=None),
                              now=lambda: now[0])
        with sessions() as session:
            ingest(session, report.model_copy(update={"report_id": uuid.uuid4()}), settings,
                   now[0])
        service.evaluate_host(REF, now[0])
    return now[0]


def _rows(session: Session, model: Any, host_id: int) -> list[dict[str, Any]]:
    table = model.__table__
    return [dict(r) for r in session.execute(
        select(table).where(table.c.host_id == host_id)).mappings()]


def _clone_fleet(session: Session) -> None:
    """Hosts 1..999: the reference's inventory and judged tests, values scattered."""
    ref = session.scalars(select(Host).where(Host.name == REF)).one()
    host_cols = {c.name: getattr(ref, c.name) for c in Host.__table__.columns if c.name != "id"}
    gpus = [{k: v for k, v in r.items() if k != "id"} for r in _rows(session, Gpu, ref.id)]
    pairs = [{k: v for k, v in r.items() if k != "id"} for r in _rows(session, Pair, ref.id)]
    tests = _rows(session, JudgedTest, ref.id)
    rng = random.Random(7)
    for i in range(1, HOSTS):
        host_id = session.execute(insert(Host).values(**{**host_cols, "name": f"bench-peers-"
                                                         f"{i:04d}"}).returning(Host.id)).scalar()
        factor = 0.91 if i == 1 else 1.0
        session.execute(insert(Gpu), [{**g, "host_id": host_id} for g in gpus])
        session.execute(insert(Pair), [{**p, "host_id": host_id} for p in pairs])
        session.execute(insert(JudgedTest), [
            {**t, "host_id": host_id,
             "value": t["value"] and t["value"] * factor * rng.uniform(0.99, 1.01),
             "baseline": t["baseline"] and t["baseline"] * factor} for t in tests])
        if i % 100 == 0:
            session.commit()
    session.commit()


def bench_backend(name: str, url: str) -> None:
    settings = Settings(database_url=url)
    engine = make_engine(settings)
    upgrade_to_head(engine)
    sessions = make_sessionmaker(engine)
    now = _reference_host(sessions, settings)
    service = AlertingService(sessions, settings, AlertingSettings())
    with sessions() as session:
        _clone_fleet(session)
        rows = session.query(JudgedTest).count()
    recompute = median_ms(lambda: service.refresh_peers(now), repeat=3)
    with sessions() as session:
        row = session.scalars(select(Host).where(Host.name == REF)).one()
        fabric = load_fabric(session, row)
        tests = tests_from_rows(stored_rows(session, row.id)["test"])
        checks = median_ms(lambda: host_peer_checks(session, settings, row, fabric, tests))
        sweep = median_ms(lambda: judge_host_now(session, settings, row, now))
        inventory = median_ms(lambda: judge_host_now(session, settings, row, now,
                                                     Prior(tests=dict(tests))))
        judge_and_store(session, settings, row, now)
        session.commit()
        fast = median_ms(lambda: judge_and_store(session, settings, row, now, may_skip=True))
    engine.dispose()
    print(f"  {name}: {HOSTS} hgx8 hosts, {rows} judged (pair, test) rows")
    print(f"  {name}: recompute every group          {recompute:8.1f} ms = "
          f"{recompute / sweep:5.1f} x one host judgement after a sweep ({sweep:.1f} ms)")
    print(f"  {name}: peer checks in one judgement   {checks:8.2f} ms = "
          f"{checks / inventory:5.2f} of a judgement after an inventory ({inventory:.1f} ms), "
          f"{checks / sweep:5.2f} of one after a sweep")
    print(f"  {name}: fast path (nothing new)       {fast:8.2f} ms, no read added by peers")


def main() -> int:
    with postgres_url() as url:
        if url is not None:
            bench_backend("postgresql", url)
    with sqlite_url() as url:
        bench_backend("sqlite", url)
    return 0


if __name__ == "__main__":
    from bench.helpers.cli import no_options

    no_options(__doc__, __file__)
    raise SystemExit(main())
