"""Fault drill: break the server, the database and the spool under a delivering agent, and
print, for each fault, how many reports were sent and how many the database stored.

The promise checked: every report is stored exactly once, or counted as lost /
set aside where the fault makes keeping it impossible (a full disk, a report the server
refuses). `sent == stored + counted` and no report stored twice, for every fault:

  server killed mid-ingest    SIGKILL of `peerwatch serve` while reports stream in, restart
  PostgreSQL restarted        a private throwaway cluster (never the shared one) restarted
                              under a streaming agent; posts in flight get 503 and retry
  server down under an agent  a real `peerwatch probe` process; the server away for 15 s
  spool corrupt               a garbage file among the spooled reports
  spool full                  a 256 KiB tmpfs as the spool while the server is away
  spool read-only             a read-only tmpfs: the agent runs send-only
  poison report at the head   the oldest spooled report is one the server refuses (422)

Reference: 0 reports lost or doubled beyond those counted. Cases that need root (tmpfs) or
PostgreSQL's initdb say so and are skipped where those are missing.
"""

from __future__ import annotations

import logging
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel

from bench.helpers.drill import (
    ROOT,
    TOKEN,
    PrivateCluster,
    Reports,
    Server,
    drain,
    outbox,
    private_cluster_possible,
    serving,
    sqlite_url,
    stored,
    tmpfs,
)
from bench.helpers.size import sized
from peerwatch.probes.agent.sender import SendResult
from peerwatch.probes.agent.spool import SendOnlySpool, Spool, open_spool

RESULTS: list[bool] = []


def verdict(fault: str, sent: int, database_url: str, counted: int = 0,
            note: str = "") -> None:
    held = stored(database_url)
    ok = held.rows == held.distinct and held.distinct + counted == sent
    RESULTS.append(ok)
    extra = f", counted lost/set aside {counted}" if counted else ""
    print(f"  {fault:<28} sent {sent:>4}, stored {held.distinct:>4} (rows {held.rows})"
          f"{extra}{'; ' + note if note else ''}: {'OK' if ok else 'FAILED'}")


def skipped(fault: str, why: str) -> None:
    print(f"  {fault:<28} skipped: {why}")


def _stream(url: str, spool_dir: Path, count: int, fault_at_s: float,
            fault: Callable[[], None]) -> tuple[int, int, str]:
    """Submit `count` reports back to back; `fault` runs in a thread after `fault_at_s`."""
    reports = Reports()
    box = outbox(url, Spool(spool_dir, 64 << 20))
    statuses: Counter[str] = Counter()
    send = box.sender.send

    def counted(report: BaseModel) -> SendResult:  # the real send, its answers tallied
        answer = send(report)
        statuses[str(answer.status or "no answer")] += 1
        return answer

    box.sender.send = counted  # type: ignore[method-assign]
    timer = threading.Timer(fault_at_s, fault)
    timer.start()
    for _ in range(count):
        box.submit(reports.new())
        time.sleep(0.02)
    timer.join()
    drain(box)
    lost = box.spool.dropped()
    answers = ", ".join(f"{n} x {k}" for k, n in sorted(statuses.items()))
    box.close()
    return count, lost, f"answers: {answers}"


def server_killed_mid_ingest() -> None:
    with sqlite_url() as db, tempfile.TemporaryDirectory() as spool:
        server = Server(db).start()

        def kill_and_restart() -> None:
            server.kill()
            time.sleep(2)
            server.start()

        sent, lost, note = _stream(server.url, Path(spool), 60, 0.8, kill_and_restart)
        server.stop()
        verdict("server killed mid-ingest", sent, db, lost, note)


def postgres_restarted() -> None:
    fault = "PostgreSQL restarted"
    if not private_cluster_possible():
        skipped(fault, "initdb/pg_ctl (or runuser, as root) not found: a private cluster "
                "is needed")
        return
    try:
        cluster = PrivateCluster().start()
    except (RuntimeError, OSError) as exc:
        skipped(fault, f"could not make a private cluster: {exc}")
        return
    try:
        with serving(cluster.url) as server, tempfile.TemporaryDirectory() as spool:
            sent, lost, note = _stream(server.url, Path(spool), 60, 0.8, cluster.restart)
        verdict(fault, sent, cluster.url, lost, note)
    finally:
        cluster.remove()


SUMMARY = re.compile(r"probes\.agent\.worker: (sweep|inventory) report: .*; (\w+)$")


def server_down_under_agent(down_s: float = 15.0) -> None:
    with sqlite_url() as db, tempfile.TemporaryDirectory() as spool:
        server = Server(db).start()
        env = {**os.environ, "PEERWATCH_PROBE_BACKOFF_INITIAL_S": "0.5",
               "PEERWATCH_PROBE_BACKOFF_MAX_S": "3", "PEERWATCH_PROBE_TOKEN": TOKEN}
        agent = subprocess.Popen(
            [sys.executable, "-m", "peerwatch.app.cli", "probe", "--server", server.url,
             "--fabric", "simulated:h200x2", "--hostname", "drill-agent", "--spool-dir", spool,
             "--inventory-interval", "1", "--sweep-interval", "4", "--sweep-jitter", "0",
             "--log-level", "DEBUG"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, text=True)
        time.sleep(4)
        server.stop()
        time.sleep(down_s)
        server.start()
        deadline = time.monotonic() + 30
        time.sleep(2)
        while any(p.suffix == ".json" for p in Path(spool).iterdir()):
            if time.monotonic() > deadline:
                break
            time.sleep(0.5)
        agent.send_signal(signal.SIGINT)
        _, log = agent.communicate(timeout=30)
        server.stop()
        passes = [m.group(2) for line in log.splitlines() if (m := SUMMARY.search(line))]
        waiting = sum(1 for p in Path(spool).iterdir() if p.suffix == ".json")
        lost = passes.count("lost") + passes.count("set_aside")
        verdict(f"server down {down_s:g} s (agent)", len(passes) - waiting, db, lost,
                f"{waiting} left spooled at stop")


def spool_corrupt() -> None:
    with sqlite_url() as db, serving(db) as server, tempfile.TemporaryDirectory() as spool:
        reports = Reports()
        with Spool(Path(spool), 1 << 24) as s:
            for _ in range(10):
                s.put(reports.new())
            (Path(spool) / f"{0:012d}-{'0' * 8}-0000-0000-0000-{'0' * 12}.json").write_text("{")
        box = outbox(server.url, Spool(Path(spool), 1 << 24))
        drain(box)
        aside = len(box.spool.set_aside_files())
        box.close()
        verdict("spool corrupt", 10, db, 0, f"{aside} garbage file set aside and counted")


def spool_full() -> None:
    with (tempfile.TemporaryDirectory() as tmp, tmpfs(Path(tmp) / "spool", "size=256k") as disk,
          sqlite_url() as db):
        if disk is None:
            skipped("spool full", "cannot mount a tmpfs (needs root)")
            return
        server = Server(db)  # not started: the agent spools until the disk is full
        reports = Reports()
        box = outbox(server.url, Spool(disk, 1 << 24))
        for _ in range(40):
            box.submit(reports.new())
        lost = box.spool.dropped()
        server.start()
        time.sleep(2.5)  # the backoff runs out
        drain(box)
        box.close()
        server.stop()
        verdict("spool full (256 KiB tmpfs)", 40, db, lost)


def spool_read_only() -> None:
    with (tempfile.TemporaryDirectory() as tmp, tmpfs(Path(tmp) / "ro", "ro,size=64k") as disk,
          sqlite_url() as db, serving(db) as server):
        if disk is None:
            skipped("spool read-only", "cannot mount a tmpfs (needs root)")
            return
        spool = open_spool(disk / "spool", 1 << 24)
        mode = "send-only" if isinstance(spool, SendOnlySpool) else "spooling"
        reports = Reports()
        box = outbox(server.url, spool)
        for _ in range(20):
            box.submit(reports.new())
        verdict("spool read-only", 20, db, box.spool.dropped(), f"agent ran {mode}")


def poison_at_head() -> None:
    with sqlite_url() as db, serving(db) as server, tempfile.TemporaryDirectory() as spool:
        reports = Reports()
        box = outbox(server.url, Spool(Path(spool), 1 << 24))
        box.keep(reports.new(hours_ahead=3))  # a clock far ahead: the server refuses it
        for _ in range(30):
            box.keep(reports.new())
        started = time.monotonic()
        drain(box)
        took = time.monotonic() - started
        verdict("poison report at the head", 31, db, box.spool.dropped(),
                f"the other 30 delivered in {took:.1f} s")
        box.close()


# at smoke size, two quick cases that still start a server and deliver through a spool
CASES = sized((server_killed_mid_ingest, postgres_restarted, server_down_under_agent,
               spool_corrupt, spool_full, spool_read_only, poison_at_head),
              (spool_corrupt, poison_at_head))


def main() -> int:
    print("fault drill: sent vs stored (reference: equal, or the difference counted)")
    logging.getLogger("probes").setLevel(logging.CRITICAL)  # the faults are meant; be quiet
    for case in CASES:
        started = time.monotonic()
        try:
            case()
            print(f"  {'':<28} ({time.monotonic() - started:.0f} s)")
        except Exception as exc:  # noqa: BLE001 - one broken case must not hide the others
            RESULTS.append(False)
            print(f"  {case.__name__:<28} FAILED to run: {type(exc).__name__}: {exc}")
    return 0 if all(RESULTS) else 1


if __name__ == "__main__":
    from bench.helpers.cli import no_options

    no_options(__doc__, __file__)
    sys.exit(main())
