"""Is rolling NVLink domains up at read time cheap and bounded? Measured, not assumed.

`/api/v1/domains`, `/domains/{id}` and `/scheduler/cliques` read the stored fabric info and
judged verdict of every GPU in a domain (of one domain for `/domains/{id}`: the indexed
`gpus.nvlink_domain`, `app/queries/domains.py`) and roll them up per request, instead of
storing a domain verdict when a member host is judged. That is right only if a read stays
well under the 100 ms a scheduler hook can afford (bench/placement.py's budget) at fleet
sizes we serve, and costs about what the existing whole-fleet read `/scheduler/hosts`
(`app/queries/scheduler.py:schedulable`, the reference) costs on the same fleet.

Fleets of 1, 10 and 50 NVL72 racks (18 trays x 4 GPUs each, 72 to 3600 GPUs) beside 8-GPU
hosts without a domain (as many GPUs again), written straight into a migrated SQLite
database (judged rows as ingest would store them). Prints the median CPU time
(`time.process_time`) of each read and its ratios to the reference and to the budget; a
ratio to the budget above 1.0 fails the benchmark.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import insert
from sqlalchemy.orm import Session

from bench.helpers.size import sized, status_for_budget
from bench.helpers.timing import median_ms
from peerwatch.app.analysis.domains import domain_key
from peerwatch.app.queries.domains import clique_fits, domain_detail, domain_summaries
from peerwatch.app.queries.scheduler import schedulable
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.db import make_engine, upgrade_to_head
from peerwatch.app.store.tables.inventory import Gpu, Host
from peerwatch.app.store.tables.judged import JudgedGpu, JudgedHost
from peerwatch.probes.sim.presets import rack_cluster_uuid

BUDGET_S = 0.100
RUNS = sized(5, 1)
RACKS = sized((1, 10, 50), (1,))
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def _judged(verdict: str = "healthy") -> dict[str, Any]:
    return {"verdict": verdict, "reason": verdict, "since": NOW, "judged_at": NOW, "facts": {}}


def _gpu(host_id: int, index: int, fabric: dict[str, Any] | None) -> dict[str, Any]:
    domain = domain_key(fabric["cluster_uuid"]) if fabric else None
    return {"host_id": host_id, "index": index, "uuid": f"GPU-{host_id}-{index}",
            "nvlink_domain": domain,
            "name": "NVIDIA GB200", "pci_bus_id": f"0000:{index:02x}:00.0",
            "memory_total_bytes": 1, "nvlink_count": 18, "pcie": {}, "rdma": {},
            "switch_fabric": fabric, "present": True, "last_seen_at": NOW}


def seed(session: Session, racks: int) -> None:
    hosts, gpus, jhosts, jgpus = [], [], [], []
    plain = racks * 18 * 4 // 8
    for i in range(racks * 18 + plain):
        host_id = i + 1
        in_rack = i < racks * 18
        hosts.append({"id": host_id, "name": f"host-{i:05d}", "fabric": "bench",
                      "first_seen": NOW, "last_report_at": NOW})
        jhosts.append({"host_id": host_id, "stale": False, "gpus_total": 4, "gpus_healthy": 4,
                       **_judged()})
        for g in range(4 if in_rack else 8):
            fabric = {"state": "completed", "status": "success", "health": "healthy",
                      "clique_id": 1 + (i % 18 == 11), "health_issues": [],
                      "cluster_uuid": rack_cluster_uuid(f"rack-{i // 18}")} if in_rack else None
            gpus.append(_gpu(host_id, g, fabric))
            jgpus.append({"host_id": host_id, "gpu": g, **_judged()})
    for model, rows in ((Host, hosts), (Gpu, gpus), (JudgedHost, jhosts), (JudgedGpu, jgpus)):
        session.execute(insert(model), rows)
    session.commit()


def median_cpu_s(read: Callable[[], object]) -> float:
    return median_ms(read, RUNS, time.process_time) / 1000


def run_fleet(racks: int, workdir: Path) -> bool:
    settings = Settings(database_url=f"sqlite:///{workdir / f'domains-{racks}.db'}")
    engine = make_engine(settings)
    upgrade_to_head(engine)
    with Session(engine) as session:
        seed(session, racks)
        reference = median_cpu_s(lambda: schedulable(session, 1))
        reads = {
            "GET /domains": lambda: domain_summaries(session),
            "GET /domains/{id}": lambda: domain_detail(session, rack_cluster_uuid("rack-0")),
            "GET /scheduler/cliques?gpus=8": lambda: clique_fits(session, 8),
        }
        ok = True
        print(f"  {racks} racks ({racks * 72} GPUs in domains, {racks * 72} without): "
              f"reference /scheduler/hosts {reference * 1e3:.1f} ms")
        for name, read in reads.items():
            cpu = median_cpu_s(read)
            ok &= cpu <= BUDGET_S
            print(f"    {name:30} {cpu * 1e3:7.1f} ms  x{cpu / reference:5.2f} of the "
                  f"reference  {cpu / BUDGET_S:5.2f} of the 100 ms budget")
    engine.dispose()
    return ok


def main() -> int:
    print(f"median CPU time of {RUNS} reads, SQLite")
    with tempfile.TemporaryDirectory() as tmp:
        ok = all([run_fleet(racks, Path(tmp)) for racks in RACKS])
    return status_for_budget(ok)


if __name__ == "__main__":
    from bench.helpers.cli import no_options

    no_options(__doc__, __file__)
    raise SystemExit(main())
