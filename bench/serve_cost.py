"""CPU per report the way a fleet's reports go: through a real `peerwatch serve`.

bench/ingest.py times one report in process (the route, the transaction and the judgement
in one Python process); `serve` runs the same work spread over its ingest workers (check,
store whole, expand) and its judge process, with a hop between each. This bench posts
reports one at a time to a `serve` on a fresh PostgreSQL database (`--hosts` simulated hgx8
hosts, bodies gzip-compressed as the probe sends them once told) and, once every report is
expanded and judged, reads the CPU used: the server process, its descendants (ingest
workers, judge) and the PostgreSQL backends of its database, per sweep and per inventory,
less what the idle server uses meanwhile (its scans and figures, measured first), and where it
ran: the server process, its ingest workers, its judge, PostgreSQL.
`--before DIR` runs a checkout of another commit first (`git archive <commit> | tar -x -C
DIR`), so the two compare in one run: on a shared machine read the ratio. The
targets, for reference: sweep <= 60 ms server CPU and <= 90 ms with PostgreSQL's,
inventory <= 12 ms. Under PEERWATCH_BENCH_SIZE=smoke: 2 hosts and 2 reports of each kind.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx

from bench.helpers.cli import before_and_after, compare_parser
from bench.helpers.cpu import backends_cpu_s, serve_parts_s
from bench.helpers.fleet_load import GZIP_BASES, as_sent, host_name, probe_headers, templates
from bench.helpers.serve import serve_tree
from bench.helpers.size import sized
from bench.ingest import postgres_url

HERE = Path(__file__).resolve().parent.parent
IDLE_WITHIN_S = 300.0
IDLE_SAMPLE_S = sized(10.0, 1.0)
TARGETS_MS = {"sweep": (60.0, 90.0), "inventory": (12.0, None)}


def parse(argv: list[str]) -> argparse.Namespace:
    p = compare_parser(__doc__, __file__)
    p.add_argument("--hosts", type=int, default=sized(10, 2), help="hosts (default: 10)")
    p.add_argument("--reports", type=int, default=sized(30, 2),
                   help="reports of each kind measured (default: 30)")
    return p.parse_args(argv)


def wait_idle(base: str) -> None:
    """Wait until every report is expanded and judged (nothing queued or in flight)."""
    deadline = time.monotonic() + IDLE_WITHIN_S
    quiet = 0
    while time.monotonic() < deadline:
        ready = httpx.get(f"{base}/readyz", timeout=30).json()
        judge, ingest = ready.get("judge") or {}, ready.get("ingest") or {}
        busy = (judge.get("depth", 0) + judge.get("in_flight", 0)
                + ingest.get("expanding", 0) + ingest.get("active", 0))
        quiet = quiet + 1 if busy == 0 else 0
        if quiet >= 3:  # three polls in a row: a wake in flight would have shown
            return
        time.sleep(0.2)
    raise TimeoutError(f"serve at {base} still busy after {IDLE_WITHIN_S:g} s: {ready}")


def _post(http: httpx.Client, base: str, body: str, host: str) -> None:
    headers = probe_headers(host)
    response = http.post(f"{base}/api/v1/reports", content=as_sent(base, body, headers),
                         headers=headers)
    if response.status_code != 201:
        raise RuntimeError(f"POST answered {response.status_code}: {response.text[:300]}")
    if "gzip" in response.headers.get("accept-encoding", ""):
        GZIP_BASES.add(base)


Parts = dict[str, float]  # server, ingest, judge, postgresql -> CPU ms per report


def _parts_s(pid: int, url: str) -> Parts:
    """CPU seconds so far of a serve's parts (bench/helpers/cpu.py) and its database's backends."""
    return {**serve_parts_s(pid), "postgresql": backends_cpu_s(url)}


def per_report_ms(base: str, pid: int, url: str, kind: str, count: int, hosts: int,
                  http: httpx.Client) -> Parts:
    """CPU ms per report of `kind`, by where it ran: the server process, its ingest workers,
    its judge and PostgreSQL's backends, less what each uses idle meanwhile."""
    tpl = templates()[kind]
    idle = idle_rate(base, pid, url)
    start, t0 = _parts_s(pid, url), time.monotonic()
    for i in range(count):
        host = host_name(i % hosts)
        _post(http, base, tpl.body(host, datetime.now(UTC)), host)
    wait_idle(base)
    end, seconds = _parts_s(pid, url), time.monotonic() - t0
    return {part: 1000 * (end[part] - start[part] - idle[part] * seconds) / count
            for part in start}


def idle_rate(base: str, pid: int, url: str, seconds: float = IDLE_SAMPLE_S) -> Parts:
    """CPU seconds per second each part of the idle server (its scans, figures, the
    readiness polls of `wait_idle`) and its backends use: taken off the reports' figures."""
    start, t0 = _parts_s(pid, url), time.monotonic()
    deadline = t0 + seconds
    while time.monotonic() < deadline:
        httpx.get(f"{base}/readyz", timeout=30)
        time.sleep(0.2)
    end, elapsed = _parts_s(pid, url), time.monotonic() - t0
    return {part: (end[part] - start[part]) / elapsed for part in start}


def run_one(tree: Path, args: argparse.Namespace) -> dict[str, Parts] | None:
    GZIP_BASES.clear()
    tpl = templates()
    with postgres_url() as url, tempfile.TemporaryDirectory() as tmp:
        if url is None:
            return None
        with serve_tree(tree, url, Path(tmp)) as (base, pid), httpx.Client(timeout=60) as http:
            for i in range(args.hosts):  # each host known, with its state, before measuring
                for kind in ("sweep", "inventory"):
                    _post(http, base, tpl[kind].body(host_name(i), datetime.now(UTC)),
                          host_name(i))
            wait_idle(base)
            return {kind: per_report_ms(base, pid, url, kind, args.reports, args.hosts, http)
                    for kind in ("sweep", "inventory")}


def report(before: dict[str, Parts] | None, after: dict[str, Parts]) -> None:
    print(f"{'CPU ms per report':34} {'before':>9} {'after':>9} {'after/before':>13} "
          f"{'target':>8}")
    for kind, parts in after.items():
        was = before.get(kind) if before else None
        server_target, total_target = TARGETS_MS[kind]
        rows = [("server (with workers, judge)", _server(parts), _server(was) if was else None,
                 server_target),
                ("with PostgreSQL's backends", sum(parts.values()),
                 sum(was.values()) if was else None, total_target)]
        rows += [(f"  of which {part}", value, was.get(part) if was else None, None)
                 for part, value in parts.items()]
        for label, value, old, target in rows:
            ratio = f"{value / old:.2f}" if old else "-"
            print(f"{kind + ' ' + label:34} {old if old is not None else float('nan'):9.1f} "
                  f"{value:9.1f} {ratio:>13} {'' if target is None else f'<= {target:g}':>8}")


def _server(parts: Parts) -> float:
    return sum(v for part, v in parts.items() if part != "postgresql")


def main(argv: list[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    print(f"# {args.reports} reports of each kind, one at a time, over {args.hosts} hosts, "
          f"through `serve` on PostgreSQL; load {os.getloadavg()[0]:.1f}")
    return before_and_after(args, HERE, run_one, report)


if __name__ == "__main__":
    raise SystemExit(main())
