"""`/metrics` at fleet scale: the server's for 1000 judged 8-GPU hosts, and one agent's own.

1. Server: 1000 hosts (`--hosts N`) with their stored verdicts (one `judged_hosts` row and
   eight `judged_gpus` rows each, as the judging code writes them after every ingest), their
   eight inventory `gpus` rows and 50 firing alerts, bulk-inserted on SQLite and PostgreSQL
   (skipped with a message when PostgreSQL at 127.0.0.1:5432 is unreachable); then
   `GET /metrics` through the whole route in-process, best and median of 5 scrapes.
   Targets: at 1000 8-GPU hosts <= 2 s and <= 20 MB.
2. Agent: the `/metrics` of `peerwatch probe --metrics-port` for one simulated hgx8 host
   after a full sweep (8 GPUs, 144 NVLink ports, 56 pairs x 7 tests), over real HTTP on a
   loopback port, median of 20 scrapes. Target: <= 50 ms.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path

from fastapi.testclient import TestClient
from sqlalchemy import insert, select
from sqlalchemy.orm import Session

from bench.helpers.cli import parser
from bench.helpers.size import sized
from bench.helpers.timing import median_ms
from bench.ingest import postgres_url, sqlite_url
from peerwatch.app.alerting.settings import AlertingSettings
from peerwatch.app.main import create_app
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.db import make_engine, upgrade_to_head
from peerwatch.app.store.tables.alerts import Alert
from peerwatch.app.store.tables.inventory import Gpu, Host
from peerwatch.app.store.tables.judged import JudgedGpu, JudgedHost
from peerwatch.probes.agent.agent_state import AgentState
from peerwatch.probes.agent.metrics_server import AgentExposition, MetricsServer
from peerwatch.probes.agent.spool import Spool
from peerwatch.probes.sim.simulated import SimulatedFabric
from peerwatch.probes.sweep import SweepOptions, build_report

GPUS = 8
ALERTS = 50
SERVER_TARGET_S, SERVER_TARGET_MB, AGENT_TARGET_MS = 2.0, 20.0, 50.0


def seed_fleet(settings: Settings, hosts: int) -> None:
    """`hosts` hosts, their judged and GPU rows (every 20th degraded on GPU 3), alerts."""
    engine = make_engine(settings)
    now = datetime.now(UTC)
    judged = {"reason": "bench", "since": now - timedelta(hours=1), "judged_at": now,
              "facts": {}}
    with Session(engine) as session, session.begin():
        session.execute(insert(Host), [
            {"name": f"hgx-{i:05d}", "fabric": "nvml", "driver_version": "580.159.04",
             "cuda_version": "13.0", "probe_version": "0.1.0", "first_seen": now,
             "last_report_at": now, "last_sweep_at": now, "last_received_at": now,
             "clock_skew_s": 0.02} for i in range(hosts)])
        ids = list(session.scalars(select(Host.id).order_by(Host.id)))
        session.execute(insert(JudgedHost), [
            {"host_id": h, "verdict": "degraded" if k % 20 == 0 else "healthy", "stale": False,
             "gpus_total": GPUS, "gpus_healthy": GPUS - (k % 20 == 0), "worst_src": 3,
             "worst_dst": 5, "worst_test": "ce_write", "worst_ratio": 0.82, **judged}
            for k, h in enumerate(ids)])
        session.execute(insert(JudgedGpu), [
            {"host_id": h, "gpu": g, "verdict": "degraded" if k % 20 == 0 and g == 3
             else "healthy", **judged} for k, h in enumerate(ids) for g in range(GPUS)])
        session.execute(insert(Gpu), [
            {"host_id": h, "index": g, "uuid": f"GPU-{h}-{g}", "name": "NVIDIA H200",
             "pci_bus_id": f"0000:{0x19 + g:02X}:00.0", "memory_total_bytes": 141 << 30,
             "nvlink_count": 18, "pcie": {}, "rdma": {}, "present": True, "last_seen_at": now}
            for h in ids for g in range(GPUS)])
        session.execute(insert(Alert), [
            {"rule": "NVLinkDown", "fingerprint": f"bench-{k}", "host": f"hgx-{k * 20:05d}",
             "labels": {"severity": "critical"}, "annotations": {}, "state": "firing",
             "active_since": now, "fired_at": now, "updated_at": now}
            for k in range(min(ALERTS, max(1, hosts // 20)))])  # one at least: never empty
    engine.dispose()


def bench_server(name: str, url: str, hosts: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(database_url=url, data_dir=Path(tmp))
        engine = make_engine(settings)
        upgrade_to_head(engine)
        engine.dispose()
        started = time.perf_counter()
        seed_fleet(settings, hosts)
        print(f"  {name}: {hosts} hosts x {GPUS} GPUs judged rows inserted in "
              f"{time.perf_counter() - started:.1f} s")
        app = create_app(settings)
        app.state.alerting_settings = AlertingSettings(alert_eval_interval_s=0)
        with TestClient(app) as client:
            times, body = [], b""
            for _ in range(5):
                t0 = time.perf_counter()
                body = client.get("/metrics").content
                times.append(time.perf_counter() - t0)
    samples = sum(1 for line in body.splitlines() if line and not line.startswith(b"#"))
    mb = len(body) / 1e6
    best, median = min(times), statistics.median(times)
    print(f"  {name} server /metrics: {median * 1000:.0f} ms median (best {best * 1000:.0f}), "
          f"{mb:.2f} MB, {samples} samples ({samples / hosts:.1f} per host)")
    print(f"    time {median / SERVER_TARGET_S:.3f} of the {SERVER_TARGET_S:.0f} s target, "
          f"size {mb / SERVER_TARGET_MB:.3f} of the {SERVER_TARGET_MB:.0f} MB target")


def bench_agent() -> None:
    """A scrape end to end over loopback HTTP (stdlib client: the scraper's own cost is not
    the agent's), and what recording a pass costs the worker (the host's text is rendered
    then, once per pass, not per scrape)."""
    fabric = SimulatedFabric("hgx8", seed=11, hostname="bench-hgx8")
    report = build_report(fabric, options=SweepOptions(timeout_s=None))
    state = AgentState()
    with tempfile.TemporaryDirectory() as tmp:
        spool = Spool(Path(tmp) / "spool", 64 << 20)
        expose = AgentExposition(state, spool)
        record = median_ms(lambda: state.record(report), 10)
        server = MetricsServer(expose, 0, "127.0.0.1")
        try:
            url = f"http://127.0.0.1:{server.port}/metrics"
            urllib.request.urlopen(url, timeout=10).read()  # warm-up
            scrape = median_ms(lambda: urllib.request.urlopen(url, timeout=10).read(), 20)
            body = urllib.request.urlopen(url, timeout=10).read()
        finally:
            server.close()
            spool.close()
    samples = sum(1 for line in body.splitlines() if line and not line.startswith(b"#"))
    print(f"  agent /metrics (hgx8): a scrape {scrape:.1f} ms median over HTTP, "
          f"{len(body) / 1e3:.0f} kB, {samples} samples; {scrape / AGENT_TARGET_MS:.3f} of the "
          f"{AGENT_TARGET_MS:.0f} ms target")
    print(f"    recording a pass and rendering its text (worker thread, once per pass): "
          f"{record:.1f} ms; {record / AGENT_TARGET_MS:.3f} of the same target")


def main(argv: list[str] | None = None) -> int:
    options = parser(__doc__, __file__)
    options.add_argument("--hosts", type=int, default=sized(1000, 10),
                         help="hosts (default: 1000)")
    args = options.parse_args(argv or [])
    with sqlite_url() as url:
        bench_server("sqlite", url, args.hosts)
    with postgres_url() as pg:
        if pg is not None:
            bench_server("postgresql", pg, args.hosts)
    bench_agent()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
