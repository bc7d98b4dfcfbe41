"""Bytes a host costs on PostgreSQL at the probes' real cadence, per table, and the fleet's.

`--hosts` simulated hgx8 hosts post through a real `peerwatch serve` (the report path a fleet's
reports take: HTTP, the ingest workers, the judge, the maintenance job's rollups) on a fresh
PostgreSQL database: each host a sweep every 10 min and an inventory + counter report every
30 s over `--hours` of probe time ending now, timestamps spaced as the real probes' and sent
as fast as the server takes them (a few hosts at once, one report in flight per host, 429/503
answered by waiting as the agent does). What each host posts is what the agent of the tree
under test sends (`bench/helpers/agent_wire.py`): every report in full where the tree's agent
knows no other form.

The fleet's NVLink traffic: `--busy` of the hosts move data on every port (their tx/rx
counters grow every interval, as under a training job), the others are idle; no error
counter grows (a healthy fleet). The table sizes (`pg_total_relation_size`: heap, indexes,
TOAST, partitions summed into their parent) are read before the first post, after the first
20 minutes of reports (a host's own rows: inventory, judged state; shown apart) and after
the last report is judged and rolled up; the growth after the first 20 minutes over hosts
x days is a host's cost per day, and x 10,000 hosts x 30 days the fleet's (raw samples are
kept `retention_raw_days`, 14 by default; rollups and report rows longer). `received_reports`
is working space (a body waits there until its rows are written): its size is shown, not
counted per day. So are the state tables, whose rows did not grow over the measured part
(verdicts, runtime, the fleet's peer statistics, rewritten in place): their size at the end
is shown per host with what they grew in row versions, which vacuum and HOT updates take
back, so it is no cost per day. Rollups are written once an hour is over: their growth is
counted per hour rolled up in the measured part, not per hour of probe time.

Beside the bytes, the CPU the server side spent on those reports (the server process, its
ingest workers and judge, and its database's PostgreSQL backends: bench/helpers/cpu.py, less
what the idle server uses meanwhile) per host per 10 min of probe time; the target is <= 0.3
s, 2,000 hosts a core. Its reports are sent back to back, so the server's gaps at the real
cadence are not in it.

`--before DIR` runs a checkout of another commit first (`git archive <commit> | tar -x -C
DIR`), with the same hosts, hours and traffic, so the two compare in one run. Target: <= 10
MB per host per day, <= 3 TB for 10,000 hosts x 30 days. Under PEERWATCH_BENCH_SIZE=smoke:
2 hosts over 15 min.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
from sqlalchemy import create_engine, text

from bench.helpers.agent_wire import AgentWire
from bench.helpers.cli import before_and_after, compare_parser
from bench.helpers.cpu import backends_cpu_s, serve_parts_s
from bench.helpers.fleet_load import GZIP_BASES, as_sent, host_name, learn_gzip, probe_headers
from bench.helpers.serve import serve_tree
from bench.helpers.size import sized
from bench.ingest import postgres_url
from bench.serve_cost import idle_rate, wait_idle
from peerwatch.app.ingest.heard import HEARD_FLUSH_S
from peerwatch.probes.agent.sender import REPORTS_PATH
from peerwatch.probes.heartbeat import HEARTBEATS_PATH

HERE = Path(__file__).resolve().parent.parent
INVENTORY_S, SWEEP_S = 30, 600  # the probe's real cadence
MAINTENANCE_S = 5.0  # the bench's server rolls up every 5 s, so the rollups count too
IN_FLIGHT = 4  # hosts posting at once: as fast as the server takes them, not a flood
# two sweeps (one at smoke size): a host's own rows, and its first partitions
FIRST = timedelta(minutes=sized(20, 10))
# working space, not history: a report's body waits here until its rows are written, then
# its row is deleted; vacuum reuses the space, so its size follows the load, not the days
WORKING = ("received_reports",)
FLEET_HOSTS, FLEET_DAYS = 10_000, 30
TARGET_MB_PER_DAY, TARGET_FLEET_TB = 10.0, 3.0
TARGET_CPU_S = 0.3  # server tree + PostgreSQL per host per 10 min: 2,000 hosts a core
TARGET_HEARTBEAT_MS = 1.0  # server tree + PostgreSQL per heartbeat
HEARTBEATS = sized(3000, 200)  # heartbeats timed apart, for their own CPU figure
IDLE_S = sized(10.0, 1.0)  # the idle server's CPU rate, sampled before the measured part
MB, TB = 1e6, 1e12

UPDATED = "judged_tests"  # rewritten in place every sweep: its row versions are counted
# Rolled up once an hour is over: its growth is per hour rolled up in the measured part (an
# hour or two of it), not per hour of probe time, which would count a boundary's luck.
ROLLUPS = "measurement_rollups"
ROLLED_HOURS = text(f"SELECT count(DISTINCT hour) FROM {ROLLUPS}")
STATS = text("SELECT n_live_tup, n_dead_tup, n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables "
             "WHERE relid = to_regclass(:t)")
SIZES = text("""
    SELECT coalesce(pg_partition_root(c.oid), c.oid)::regclass::text AS name,
           sum(pg_total_relation_size(c.oid))
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE c.relkind = 'r' AND n.nspname = 'public'
    GROUP BY 1""")


def parse(argv: list[str]) -> argparse.Namespace:
    p = compare_parser(__doc__, __file__)
    p.add_argument("--hosts", type=int, default=sized(4, 2), help="hosts (default: 4)")
    p.add_argument("--hours", type=float, default=sized(1.5, 0.25),
                   help="hours of probe time each host reports (default: 1.5)")
    p.add_argument("--busy", type=float, default=0.5,
                   help="share of hosts whose NVLink ports carry traffic (default: 0.5)")
    args = p.parse_args(argv)
    if args.hosts < 1 or args.hours * 3600 <= FIRST.total_seconds() + INVENTORY_S \
            or not 0 <= args.busy <= 1:
        p.error(f"--hosts must be >= 1, --hours over {FIRST.total_seconds() / 3600:.2f} "
                "(the first reports are measured apart) and --busy within 0..1")
    return args


def table_bytes(url: str) -> dict[str, int]:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return {name: int(size) for name, size in conn.execute(SIZES)}
    finally:
        engine.dispose()


def row_counts(url: str) -> dict[str, int]:
    """Every table's rows (exact), and under ROLLUPS + "_hours" the hours rolled up."""
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            names = [name for name, _ in conn.execute(SIZES)]
            counts = {n: int(conn.execute(text(f"SELECT count(*) FROM {n}")).scalar() or 0)
                      for n in names}
            if ROLLUPS in counts:
                counts[ROLLUPS + "_hours"] = int(conn.execute(ROLLED_HOURS).scalar() or 0)
            return counts
    finally:
        engine.dispose()


def row_versions(url: str, table: str) -> tuple[int, ...]:
    """(live rows, dead row versions, updates, HOT updates) of `table` so far
    (pg_stat_user_tables): a HOT update leaves its old version on its page, where the
    next read prunes it, without a new index entry."""
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            found = conn.execute(STATS, {"t": table}).first()
            return tuple(int(v) for v in found) if found else (0, 0, 0, 0)
    finally:
        engine.dispose()


def schedule(hours: float, end: datetime) -> list[tuple[datetime, str]]:
    """One host's reports over `hours` up to `end`: (time, kind), in time order."""
    start = end - timedelta(hours=hours)
    steps = int(hours * 3600 // INVENTORY_S)
    return [(start + timedelta(seconds=k * INVENTORY_S),
             "sweep" if k % (SWEEP_S // INVENTORY_S) == 0 else "inventory")
            for k in range(steps)]


async def _post(http: httpx.AsyncClient, base: str, host: str, body: str,
                path: str = REPORTS_PATH) -> int:
    """Post until stored, as the agent does: a refusal waits its Retry-After, a connection
    the server closed is tried again (the same report id: never stored twice). A heartbeat
    goes plain, and its 409 (send a full report) is answered to the caller."""
    beat = path == HEARTBEATS_PATH
    while True:
        headers = probe_headers(host)
        try:
            answer = await http.post(f"{base}{path}", headers=headers,
                                     content=body.encode() if beat
                                     else as_sent(base, body, headers))
        except httpx.TransportError:
            await asyncio.sleep(1.0)
            continue
        if not beat:
            learn_gzip(base, answer)
        if answer.status_code in (200, 201, 202, 204) or beat and answer.status_code == 409:
            return answer.status_code
        if answer.status_code not in (429, 503):
            raise RuntimeError(f"{host}: POST answered {answer.status_code}: "
                               f"{answer.text[:300]}")
        await asyncio.sleep(float(answer.headers.get("retry-after", 1)))


async def feed(base: str, wires: list[AgentWire], plan: list[tuple[datetime, str]]
               ) -> Counter[str]:
    """Every host's reports of `plan`, each host's in time order: posts sent, by form (a
    heartbeat where the tree's agent sends one, "full" otherwise)."""
    gate = asyncio.Semaphore(IN_FLIGHT)
    sent: Counter[str] = Counter()

    async def host(wire: AgentWire, http: httpx.AsyncClient) -> None:
        for at, kind in plan:
            path, body = wire.post_for(kind, at)
            async with gate:
                status = await _post(http, base, wire.host, body, path)
                if status == 409:  # the server asks for a full report: sent at once
                    wire.resync()
                    sent["resync"] += 1
                    path, body = REPORTS_PATH, wire.full(kind, at)
                    await _post(http, base, wire.host, body)
            sent["heartbeat" if path == HEARTBEATS_PATH else "full"] += 1

    async with httpx.AsyncClient(timeout=120) as http:
        await asyncio.gather(*(host(wire, http) for wire in wires))
    return sent


def settled(base: str) -> None:
    """Every report stored, judged, and rolled up by a maintenance pass after it."""
    wait_idle(base)
    time.sleep(3 * MAINTENANCE_S)
    wait_idle(base)


@dataclass
class Grown:
    """Bytes per table: what the hosts' first FIRST_S of reports left (a host's own rows:
    its inventory, judged state; the first partitions), and what the rest added."""

    first: dict[str, int]
    rest: dict[str, int]
    rest_hours: float
    cpu_s: float  # the server side's CPU over the rest, less what it uses idle meanwhile
    heartbeat_ms: float | None = None  # server-side CPU per heartbeat (None: none sent)
    versions: tuple[int, ...] = (0, 0, 0, 0)  # UPDATED's row_versions at the end
    rows_first: dict[str, int] | None = None  # row_counts after the first FIRST_S
    rows_end: dict[str, int] | None = None  # and at the end
    size_end: dict[str, int] | None = None  # table_bytes at the end

    def cpu_per_host_10_min(self, hosts: int) -> float:
        return self.cpu_s / hosts / (self.rest_hours * 6)

    def state(self) -> list[str]:
        """Tables whose rows did not grow over the measured part: a host's state, rewritten
        in place (judged verdicts, runtime, the fleet's peer statistics), not history. What
        they grew is row versions that vacuum reclaims and a page's free room takes again
        (HOT updates), so it is shown apart, never multiplied by days."""
        if not self.rows_first or not self.rows_end:
            return []
        return [name for name, rows in self.rows_end.items() if name in self.rest
                and name not in WORKING and 0 < rows <= self.rows_first.get(name, 0)]

    def rolled_days(self) -> float | None:
        """Days of rollups the measured part wrote (hours rolled up / 24), None if none."""
        if not self.rows_first or not self.rows_end:
            return None
        key = ROLLUPS + "_hours"
        hours = self.rows_end.get(key, 0) - self.rows_first.get(key, 0)
        return hours / 24 if hours > 0 else None


def run_one(tree: Path, args: argparse.Namespace) -> Grown | None:
    GZIP_BASES.clear()
    busy = round(args.hosts * args.busy)
    wires = [AgentWire(tree, host_name(i), busy=i < busy) for i in range(args.hosts)]
    plan = schedule(args.hours, datetime.now(UTC) - timedelta(seconds=5))
    split = next(i for i, (at, _) in enumerate(plan) if at >= plan[0][0] + FIRST)
    with postgres_url() as url, tempfile.TemporaryDirectory() as tmp:
        if url is None:
            return None
        env = {"PEERWATCH_MAINTENANCE_INTERVAL_S": str(MAINTENANCE_S)}
        with serve_tree(tree, url, Path(tmp), env) as (base, pid):
            empty, t0 = table_bytes(url), time.monotonic()
            sent = asyncio.run(feed(base, wires, plan[:split]))
            settled(base)
            warm, idle = table_bytes(url), sum(idle_rate(base, pid, url, IDLE_S).values())
            rows_first = row_counts(url)
            cpu0, t1 = tree_cpu_s(pid, url), time.monotonic()
            sent += asyncio.run(feed(base, wires, plan[split:]))
            wait_idle(base)
            cpu = tree_cpu_s(pid, url) - cpu0 - idle * (time.monotonic() - t1)
            settled(base)
            full, versions = table_bytes(url), row_versions(url, UPDATED)
            rows_end = row_counts(url)
            beat_ms = heartbeat_ms(base, wires, pid, url, idle) if wires[0].heartbeats else None
        print(f"  {tree}: {dict(sent)} posts in {time.monotonic() - t0:.0f} s")
    rest_hours = (plan[-1][0] - plan[split][0]).total_seconds() / 3600 + INVENTORY_S / 3600
    return Grown(_minus(warm, empty), _minus(full, warm), rest_hours, cpu, beat_ms, versions,
                 rows_first, rows_end, full)


def heartbeat_ms(base: str, wires: list[AgentWire], pid: int, url: str, idle: float) -> float:
    """Server-side CPU (serve tree + PostgreSQL backends, less idle) per heartbeat: HEARTBEATS
    of them on each host's newest full report, IN_FLIGHT at once, and the heard book's
    batched UPDATE of their last-heard times (waited for) counted in."""
    async def beat_all() -> int:
        gate, refused = asyncio.Semaphore(IN_FLIGHT), 0

        async def one(wire: AgentWire, http: httpx.AsyncClient) -> None:
            nonlocal refused
            async with gate:
                if await _post(http, base, wire.host, wire.heartbeat(), HEARTBEATS_PATH) != 204:
                    refused += 1

        async with httpx.AsyncClient(timeout=120) as http:
            await asyncio.gather(*(one(wires[k % len(wires)], http) for k in range(HEARTBEATS)))
        return refused

    cpu0, t0 = tree_cpu_s(pid, url), time.monotonic()
    if refused := asyncio.run(beat_all()):
        raise RuntimeError(f"{refused} of {HEARTBEATS} heartbeats were not answered 204")
    time.sleep(2 * HEARD_FLUSH_S)  # their last-heard times written
    cpu = tree_cpu_s(pid, url) - cpu0 - idle * (time.monotonic() - t0)
    return 1000 * cpu / HEARTBEATS


def tree_cpu_s(pid: int, url: str) -> float:
    """CPU seconds so far of the server process, its ingest workers and judge, and the
    PostgreSQL backends of its database (bench/helpers/cpu.py)."""
    return sum(serve_parts_s(pid).values()) + backends_cpu_s(url)


def _minus(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    return {name: after[name] - before.get(name, 0) for name in after}


def per_host_day(grown: Grown, args: argparse.Namespace) -> dict[str, float]:
    """Each history table's growth per host per day, after the first FIRST_S (the rollups'
    per day of hours rolled up, where the measured part rolled any)."""
    days, state = grown.rest_hours / 24, grown.state()
    rolled = grown.rolled_days()
    return {name: size / args.hosts / (rolled if name == ROLLUPS and rolled else days)
            for name, size in grown.rest.items() if name not in WORKING and name not in state}


def report_for(args: argparse.Namespace):  # noqa: ANN201 - the runner's callback
    def report(before: Grown | None, after: Grown) -> None:
        now = per_host_day(after, args)
        was = per_host_day(before, args) if before else {}
        names = sorted(set(now) | set(was), key=lambda n: -max(now.get(n, 0), was.get(n, 0)))
        print(f"{'MB per host per day':28} {'before':>9} {'after':>9} {'after/before':>13}")
        for name in [*names, "total"]:
            value = sum(now.values()) if name == "total" else now.get(name, 0)
            old = (sum(was.values()) if name == "total" else was.get(name, 0)) if was else None
            if name != "total" and max(abs(value), abs(old or 0)) < 0.005 * MB:
                continue  # tables a host does not grow
            ratio = f"{value / old:.3f}" if old else "-"
            print(f"{name:28} {_mb(old):>9} {value / MB:9.2f} {ratio:>13}")
        for name in WORKING:  # printed, not in the total: see WORKING
            old_size = before.rest.get(name, 0) / MB if before else None
            print(f"{name + ' (working space)':28} "
                  f"{'-' if old_size is None else f'{old_size:.2f}':>9} "
                  f"{after.rest.get(name, 0) / MB:9.2f}  MB at the end, all hosts")
        _state(before, after, args.hosts)
        first = sum(after.first.values()) / args.hosts
        old_first = sum(before.first.values()) / args.hosts if before else None
        print(f"{'first_reports_mb_per_host':28} {_mb(old_first):>9} {first / MB:9.2f}")
        fleet = FLEET_HOSTS * FLEET_DAYS
        total, old_total = sum(now.values()), sum(was.values()) if was else None
        print(f"{'total_mb_per_host_day':28} {_mb(old_total):>9} {total / MB:9.2f} "
              f"{'':>13} <= {TARGET_MB_PER_DAY:g}")
        print(f"{'fleet_tb_10000_hosts_30_days':28} "
              f"{'-' if old_total is None else f'{old_total * fleet / TB:.2f}':>9} "
              f"{total * fleet / TB:9.2f} {'':>13} <= {TARGET_FLEET_TB:g}")
        _versions(before, after)
        cpu = after.cpu_per_host_10_min(args.hosts)
        old_cpu = before.cpu_per_host_10_min(args.hosts) if before else None
        print(f"{'cpu_s_per_host_per_10_min':28} "
              f"{'-' if old_cpu is None else f'{old_cpu:.3f}':>9} {cpu:9.3f} "
              f"{f'{cpu / old_cpu:.3f}' if old_cpu else '-':>13} <= {TARGET_CPU_S:g}")
        beat = after.heartbeat_ms
        old_beat = before.heartbeat_ms if before else None
        print(f"{'heartbeat_server_cpu_ms':28} {'-' if old_beat is None else f'{old_beat:.3f}':>9} "
              f"{'-' if beat is None else f'{beat:.3f}':>9} {'':>13} <= {TARGET_HEARTBEAT_MS:g}")
    return report


def _state(before: Grown | None, after: Grown, hosts: int) -> None:
    """The state tables (`Grown.state`): MB per host at the end, and what they grew meanwhile
    (row versions), for each tree; not in the per-day total."""
    for name in sorted(set(after.state()) | set(before.state() if before else [])):
        if max((g.size_end or {}).get(name, 0) for g in (before, after) if g) < 0.01 * MB * hosts \
                and after.rest.get(name, 0) < 0.005 * MB * hosts:
            continue  # a few pages: nothing a host carries
        cells = []
        for g in (before, after):
            if g is None or g.size_end is None or name not in g.state():
                cells.append(f"{'-':>9}")
                continue
            cells.append(f"{g.size_end.get(name, 0) / hosts / MB:9.2f}")
        grew = after.rest.get(name, 0) / hosts / MB
        print(f"{name + ' (state)':28} {cells[0]} {cells[1]}  MB a host at the end "
              f"(grew {grew:.2f} in versions)")


def _versions(before: Grown | None, after: Grown) -> None:
    """UPDATED's rows at the end: live, dead versions, updates and the share of them HOT."""
    for i, label in enumerate(("live_rows", "dead_rows", "updates")):
        old = "-" if before is None else str(before.versions[i])
        print(f"{f'{UPDATED}_{label}':28} {old:>9} {after.versions[i]:9d}")

    def hot(g: Grown) -> str:
        return f"{g.versions[3] / g.versions[2]:.1%}" if g.versions[2] else "-"
    print(f"{f'{UPDATED}_hot_updates':28} {hot(before) if before else '-':>9} "
          f"{hot(after):>9}")


def _mb(value: float | None) -> str:
    return "-" if value is None else f"{value / MB:.2f}"


def main(argv: list[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    print(f"# {args.hosts} hosts x {args.hours:g} h of probe time (sweep every {SWEEP_S} s, "
          f"inventory every {INVENTORY_S} s), {args.busy:.0%} with NVLink traffic, through "
          f"`serve` on PostgreSQL; load {os.getloadavg()[0]:.1f}")
    return before_and_after(args, HERE, run_one, report_for(args))


if __name__ == "__main__":
    raise SystemExit(main())
