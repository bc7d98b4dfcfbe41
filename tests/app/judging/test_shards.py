"""Several judge processes per server (`PEERWATCH_JUDGE_PROCESSES`), each judging its share.

A real `peerwatch serve` on PostgreSQL with two judge children: each is told its shard, a
report of every host is judged, the figures on `/readyz` are the children's together, and
both stop with the server. A judge's scan of the database picks up only its own hosts.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import psutil

from bench.helpers.serve import interrupt, wait_for_healthz
from peerwatch.app.ingest.rows import ingest
from peerwatch.app.judging.queue import shard_of
from peerwatch.app.judging.sessions import make_sessionmaker
from peerwatch.app.judging.shards import shard_count
from peerwatch.app.judging.worker import JudgeWorker, behind_hosts
from peerwatch.app.runtime.config import Settings
from tests.app.conftest import _empty_pg, probe_headers
from tests.app.factory import sweep
from tests.app.judging.test_process import serve
from tests.conftest import SETTLE_S, eventually
from tests.probes.live_server import server_settings

HOSTS = [f"node-{c}" for c in "abcdef"]


def test_hosts_are_split_between_shards_the_same_way_everywhere() -> None:
    split = [shard_of(h, 2) for h in HOSTS]
    assert split == [shard_of(h, 2) for h in HOSTS] and set(split) == {0, 1}
    assert {shard_of(h, 1) for h in HOSTS} == {0}


def test_sqlite_has_one_judge_process_whatever_is_asked(tmp_path: Path) -> None:
    sqlite = Settings(database_url=f"sqlite:///{tmp_path / 'x.db'}", judge_processes=4)
    assert shard_count(sqlite) == 1
    assert shard_count(sqlite.model_copy(update={"database_url": "postgresql://h/db"})) == 4


def test_a_judges_scan_picks_up_only_the_hosts_of_its_shard(tmp_path: Path) -> None:
    settings = server_settings(tmp_path)
    now = datetime.now(UTC) - timedelta(minutes=1)
    worker = JudgeWorker(settings, shard=(0, 2))
    try:
        with make_sessionmaker(worker.engine)() as session:
            for host in HOSTS:
                ingest(session, sweep(host=host, at=now - timedelta(minutes=1)), settings, now)
        mine = sorted(h for h in HOSTS if shard_of(h, 2) == 0)
        assert worker._scan_once() == len(mine)
        assert worker.queue.drain(SETTLE_S)
        left = sorted(h for h, _ in behind_hosts(worker.engine, datetime.now(UTC)))
        assert left == sorted(set(HOSTS) - set(mine))
    finally:
        worker.queue.stop()
        worker.service.close()
        worker.engine.dispose()


def _judges(server: int) -> list[psutil.Process]:
    return [p for p in psutil.Process(server).children() if "judge" in p.cmdline()]


def _all_judged(base: str) -> bool:
    for host in HOSTS:
        health = httpx.get(f"{base}/api/v1/hosts/{host}/health", timeout=60).json()
        if not health.get("judged_at"):
            return False
    return True


def test_serve_with_two_judge_processes_judges_every_host(pg_database: str,
                                                          tmp_path: Path) -> None:
    _empty_pg(pg_database)
    proc, base = serve(pg_database, tmp_path, PEERWATCH_JUDGE_PROCESSES="2")
    now = datetime.now(UTC).replace(microsecond=0)
    try:
        wait_for_healthz(base, timeout_s=SETTLE_S)
        judges = eventually(lambda: len(_judges(proc.pid)) == 2 and _judges(proc.pid))
        assert judges, "serve did not start two judge processes"
        shards = sorted(p.cmdline()[p.cmdline().index("--shard") + 1] for p in judges)
        assert shards == ["0/2", "1/2"]
        for host in HOSTS:
            r = httpx.post(f"{base}/api/v1/reports", timeout=60,
                           content=sweep(host=host, at=now - timedelta(minutes=2))
                           .model_dump_json(),
                           headers={**probe_headers(), "Content-Type": "application/json"})
            assert r.status_code == 201, r.text
        assert eventually(lambda: _all_judged(base)), "a host was never judged"
        load = eventually(lambda: (j := httpx.get(f"{base}/readyz", timeout=60).json()
                                   ["judge"])["judged"] >= len(HOSTS) and j)
        assert load and load["workers"] == 2, load
    finally:
        interrupt(proc)
    assert proc.returncode == 0
    assert eventually(lambda: not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE
                                      for p in judges))
