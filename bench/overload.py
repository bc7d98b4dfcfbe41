"""Judge off the request path, before and after, in one run: how fast `POST /api/v1/reports`
answers at a real cadence, and how fast refusals and `/healthz` answer far past capacity.

Two `peerwatch serve` processes, one after the other, each on a fresh PostgreSQL database:
"before" runs the tree given by `--before` (a checkout of main, e.g. made with
`git archive <commit> | tar -x -C DIR`), "after" this tree. Each gets the same two phases
(`bench/helpers/fleet_load.py`, simulated hgx8 hosts):

1. cadence: `--hosts` (200) probes at their real cadence — an inventory every 30 s, a sweep
   every 10 min, offsets random — for `--cadence-s`: POST latency p50/p99 at the client,
   measured once every host has sent its first inventory and the judge caught up with
   those (`--warmup-s`: a new fleet's start, its p99 printed apart).
2. burst: `--posters` (200) probes sending sweeps back to back (each pausing its Retry-After
   when refused) for `--burst-s`, `/healthz` polled every 0.1 s meanwhile: refusal latency
   p50/p99, `/healthz` p99, accepted reports/s.

3. alone: `--alone` (10) sweeps posted one at a time once the burst is judged, for what a
   sweep costs the server side (server, workers, judge, PostgreSQL's backends) judged
   alone. `burst_vs_cpu_allows` is the burst's accepted sweeps per second over what the
   cores the server side had allow at that cost (`cpu_allows`; target >= 0.8).

The server process's CPU seconds per phase are printed beside (from /proc), and its
descendants' (judge and ingest processes) apart. Who is late in the burst: the server's event
loop thread's wait for a core (kernel schedstat: mean per turn, and share of the burst), the
machine's idle share, the cores the posters' own client used, and how late the side client's
own sleeps woke (its own wait for a core, inside its figures). On a shared
machine read the ratios (after / before), not the absolute figures. Targets:
POST p99 <= 20 ms at 200 real-cadence hosts; refusals and /healthz p99 <= 50 ms; the burst
at least 0.8 of what the server's CPU allows.
`post_server_p99` is the accepted POSTs' p99 by the server's own clock (`Server-Timing`).
Under PEERWATCH_BENCH_SIZE=smoke (the test suite) the defaults shrink to 3 hosts, 4 posters
and seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

import httpx

from bench.helpers import sched, side_probe
from bench.helpers.cli import before_and_after, compare_parser
from bench.helpers.cpu import backends_cpu_s, cpu_split
from bench.helpers.fleet_load import (
    Record,
    Window,
    _poll_healthz,
    burst,
    client,
    load,
    templates,
)
from bench.helpers.serve import serve_tree
from bench.helpers.size import sized
from bench.ingest import postgres_url
from bench.serve_cost import per_report_ms, wait_idle

HERE = Path(__file__).resolve().parent.parent
# the targets: latencies in ms at most, the burst's share of what the CPU allows at least
TARGETS = {"post_p99": "<= 20", "refused_p99": "<= 50", "healthz_p99": "<= 50",
           "side_healthz_p99": "<= 50", "side_refused_p99": "<= 50",
           "burst_vs_cpu_allows": ">= 0.8"}


def parse(argv: list[str]) -> argparse.Namespace:
    p = compare_parser(__doc__, __file__)
    p.add_argument("--hosts", type=int, default=sized(200, 3),
                   help="real-cadence hosts (default: 200)")
    p.add_argument("--cadence-s", type=float, default=sized(60.0, 3.0),
                   help="seconds of real-cadence load (default: 60)")
    p.add_argument("--warmup-s", type=float, default=sized(35.0, 0.0),
                   help="seconds of the cadence before measuring (each host's first "
                   "inventory: its row made, judged the first time), then until the judge "
                   "caught up, at most 3 x this; printed apart as warmup_* (default: 35)")
    p.add_argument("--compress", type=float, default=sized(1.0, 30.0),
                   help="cadence speed-up of the first phase (default: 1, the real cadence; "
                   "30 at smoke size, so a few seconds see posts)")
    p.add_argument("--posters", type=int, default=sized(200, 4),
                   help="probes posting sweeps back to back (default: 200)")
    p.add_argument("--burst-s", type=float, default=sized(30.0, 2.0),
                   help="seconds of back-to-back sweeps (default: 30)")
    p.add_argument("--alone", type=int, default=sized(10, 2),
                   help="sweeps posted one at a time after the burst, for what one costs "
                   "(default: 10)")
    return p.parse_args(argv)


def pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _ms(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.3f}" if abs(value) < 1 else f"{value:.1f}"  # shares keep their digits


async def _burst_with_health(base: str, args: argparse.Namespace,
                             tpl: dict) -> tuple[Record, Record]:
    now = time.monotonic()
    window = Window(measure_from=now, end=now + args.burst_s)
    async with client(4) as http:
        record, _ = await asyncio.gather(
            burst([base], args.posters, tpl, args.posters, args.burst_s),
            _poll_healthz(http, [base], window))
    return record, window.measured


def _per_kind(cadence: Record) -> dict[str, float | None]:
    """The accepted POSTs' latency p50/p99 per report kind, at the client and by the server's
    own clock (`Server-Timing`)."""
    out: dict[str, float | None] = {}
    for kind in ("inventory", "sweep"):
        client_ms = [s.latency_ms for s in cadence.accepted(kind)]
        own_ms = [s.server_ms for s in cadence.accepted(kind) if s.server_ms is not None]
        out |= {f"post_{kind}_p50": pct(client_ms, 0.5), f"post_{kind}_p99": pct(client_ms, 0.99),
                f"post_{kind}_server_p99": pct(own_ms, 0.99),
                f"post_{kind}_n": float(len(client_ms))}
    return out


def run_one(tree: Path, args: argparse.Namespace) -> dict[str, float | None] | None:
    """The figures of one tree; None without PostgreSQL (postgres_url says "skipped")."""
    tpl = templates()
    with postgres_url() as url, tempfile.TemporaryDirectory() as tmp:
        if url is None:
            return None
        with serve_tree(tree, url, Path(tmp)) as (base, pid):
            cpu0 = cpu_split(pid)
            window = asyncio.run(load([base], args.hosts, tpl, args.compress, args.cadence_s,
                                      settle_most_s=args.warmup_s * 3,
                                      settle_least_s=args.warmup_s))
            cadence, warmup = window.measured, window.settle
            cpu1 = cpu_split(pid)
            side = side_probe.start(base, args.burst_s)
            loop0, idle0, client0 = sched.main_thread(pid), sched.machine_idle(), \
                time.process_time()
            db0, wall0 = backends_cpu_s(url), time.monotonic()
            bursty, health = asyncio.run(_burst_with_health(base, args, tpl))
            loop = sched.main_thread(pid) - loop0
            idle, client_s = sched.idle_share(idle0, sched.machine_idle()), \
                time.process_time() - client0
            cpu2, db2, wall = cpu_split(pid), backends_cpu_s(url), time.monotonic() - wall0
            beside = side_probe.result(side)
            judge = httpx.get(f"{base}/readyz", timeout=30).json().get("judge")
            alone_ms = _sweep_alone_ms(base, pid, url, args)
    allows = cpu_allows(len(bursty.accepted()) / bursty.seconds, alone_ms, idle,
                        (sum(cpu2) - sum(cpu1) + db2 - db0) / wall)
    accepted = [s.latency_ms for s in cadence.accepted()]
    accepted_server = [s.server_ms for s in cadence.accepted() if s.server_ms is not None]
    refused = [s.latency_ms for s in bursty.samples if s.status in (429, 503)]
    return {
        "post_p50": pct(accepted, 0.5), "post_p99": pct(accepted, 0.99),
        # the server's own time (`Server-Timing`), without the client's event loop lag
        "post_server_p99": pct(accepted_server, 0.99),
        # a new fleet's first reports (each host's row made, judged the first time)
        "warmup_post_p99": pct([s.latency_ms for s in warmup.accepted()], 0.99),
        "warmup_posts": float(len(warmup.samples)),
        # per kind: sweeps are ~5 % of the posts at the real cadence, so the p99 may be theirs
        **_per_kind(cadence),
        "cadence_posts": float(len(cadence.samples)),
        "cadence_refused": float(cadence.count(429, 503)),
        "cadence_timeouts": float(cadence.count(0)),
        "cadence_cpu_s": cpu1[0] - cpu0[0],
        "cadence_workers_cpu_s": cpu1[1] - cpu0[1],
        "refused_p50": pct(refused, 0.5), "refused_p99": pct(refused, 0.99),
        "burst_accepted_per_s": len(bursty.accepted()) / bursty.seconds,
        "burst_refused": float(len(refused)), "burst_timeouts": float(bursty.count(0)),
        "healthz_p50": pct(health.healthz_ms, 0.5), "healthz_p99": pct(health.healthz_ms, 0.99),
        # from a client process of its own (bench/helpers/side_probe.py): the posters' own event
        # loop is CPU-bound and adds its lag to every figure above
        "side_healthz_p99": pct(beside["healthz_ms"], 0.99),
        "side_refused_p99": pct(beside["refused_429_ms"] + beside["refused_503_ms"], 0.99),
        # how late the side client's own sleeps woke: its wait for a core, in its figures too
        "side_own_lag_p99": pct(beside["own_lag_ms"], 0.99),
        "side_429_p99": pct(beside["refused_429_ms"], 0.99),
        "side_refused_429": float(len(beside["refused_429_ms"])),
        "side_refused_503": float(len(beside["refused_503_ms"])),
        "side_accepted_p50": pct(beside["accepted_ms"], 0.5),
        "refused_server_p99": pct([s.server_ms for s in bursty.samples
                                   if s.status in (429, 503) and s.server_ms is not None], 0.99),
        "burst_429": float(bursty.count(429)), "burst_503": float(bursty.count(503)),
        "refused_429_p99": pct([s.latency_ms for s in bursty.samples if s.status == 429], 0.99),
        # the server's side of "no turn": its event loop thread runnable but not running
        # (kernel schedstat), mean per turn on a core and as a share of the burst
        "burst_loop_wait_ms_per_turn": loop.wait_ms_per_turn,
        "burst_loop_wait_share": loop.wait_ns / 1e9 / bursty.seconds,
        "burst_idle_share": idle,
        # the posters' own process: cores it used (it shares the machine with the server)
        "burst_client_cores": client_s / bursty.seconds,
        "burst_cpu_s": cpu2[0] - cpu1[0],
        "burst_workers_cpu_s": cpu2[1] - cpu1[1],
        # cores the server and its workers used (PostgreSQL's backends not counted)
        "burst_server_cores": (sum(cpu2) - sum(cpu1)) / bursty.seconds,
        "burst_cpu_ms_per_accepted": (1000 * (sum(cpu2) - sum(cpu1)) / len(bursty.accepted())
                                      if bursty.accepted() else None),
        "judge_lag_p50_s": judge["lag_p50_s"] if judge else None,
        "judge_lag_p99_s": judge["lag_p99_s"] if judge else None,
        **allows,
    }


def _sweep_alone_ms(base: str, pid: int, url: str, args: argparse.Namespace) -> float:
    """CPU ms of one sweep posted alone to the same server, once the burst is judged:
    server, ingest workers, judge and PostgreSQL's backends (bench/serve_cost.py)."""
    wait_idle(base)
    with httpx.Client(timeout=60) as http:
        return sum(per_report_ms(base, pid, url, "sweep", args.alone, args.posters,
                                 http).values())


def cpu_allows(accepted_per_s: float, alone_ms: float, idle: float | None,
               server_cores: float) -> dict[str, float | None]:
    """How much of what the server's CPU allows the burst took (the target: >= 0.8).

    What the CPU allows is the cores the server side had over the burst divided by what one
    sweep costs it posted alone, judged alone: the machine's cores less what everything
    else used meanwhile (the posters' client, the side probe, other load), i.e. the cores
    the server, its workers, judge and PostgreSQL used plus the idle ones. An overloaded
    server that spends its CPU on refusals, or leaves cores idle, scores below 1; one whose
    judgements coalesce (a host's reports judged once) can score above."""
    cores = os.cpu_count() or 1
    if idle is None or alone_ms <= 0:
        return {"burst_cpu_allows_per_s": None, "burst_vs_cpu_allows": None}
    others = max(0.0, cores * (1 - idle) - server_cores)
    allowed = (cores - others) / (alone_ms / 1000)
    return {"sweep_alone_cpu_ms": alone_ms, "burst_server_side_cores": server_cores,
            "burst_other_cores": others, "burst_cpu_allows_per_s": allowed,
            "burst_vs_cpu_allows": accepted_per_s / allowed}


def report(before: dict[str, float | None] | None, after: dict[str, float | None]) -> None:
    print(f"{'figure':28} {'before':>10} {'after':>10} {'after/before':>13} {'target':>8}")
    for name, value in after.items():
        was = before.get(name) if before else None
        ratio = f"{value / was:.2f}" if value is not None and was else "-"
        print(f"{name:28} {_ms(was):>10} {_ms(value):>10} {ratio:>13} "
              f"{TARGETS.get(name, ''):>8}")


def main(argv: list[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    print(f"# {args.hosts} hosts at real cadence for {args.cadence_s:g} s, then "
          f"{args.posters} posting sweeps back to back for {args.burst_s:g} s; load "
          f"{os.getloadavg()[0]:.1f}; latencies in ms at the client")
    return before_and_after(args, HERE, run_one, report)


if __name__ == "__main__":
    raise SystemExit(main())
