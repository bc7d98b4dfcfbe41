"""Slow and oversized clients against a real `peerwatch serve`, before and after, in one run:
can they stall ingest, or grow the server's memory?

Each tree's server (`--before DIR`: a checkout of another commit, run first; then this
tree) runs on SQLite in a temporary folder (`--database postgresql`: a throwaway database on
the shared PostgreSQL) and meets two phases:

1. slow posters: `--posters` (40) connections post a report with the probe token and send
   its body at 1 byte/s. Once they are all sending, a real probe (the agent's own `Sender`,
   a simulated 2-GPU sweep) posts a report every 0.25 s for `--probe-s`: how many were
   answered 2xx, and the slowest answer. Then what the posters were answered: 429 at the
   door (the gate lets a burst in only as far as its slots and queue go), or 408 once the
   server's body deadline passed (`--body-timeout-s`, given to both trees as
   PEERWATCH_BODY_TIMEOUT_S; a tree without one leaves them hanging).
2. big headers: `--header-clients` (100) connections each send `--header-mb` (8) MB of one
   unfinished header as fast as the server reads it, for at most `--header-s`. The server
   process's RSS is sampled meanwhile (its peak over its level before) and `--settle-s`
   after they closed (back to its level?); and what they were answered: 431, 429 (too
   many connections from one address), or nothing at all.

Targets: every real report 2xx within 1 s beside 40 slow posters; RSS grows < 100 MB under
100 x 8 MB headers and is back within 20 MB of its level after. Under
PEERWATCH_BENCH_SIZE=smoke (the test suite) a few clients for a few seconds; the checks
that are not timings (the real reports stored, the posters cut off, the headers refused)
still fail the run.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from bench.helpers.cli import before_and_after, compare_parser
from bench.helpers.drill import Reports
from bench.helpers.fleet_load import TOKEN
from bench.helpers.serve import serve_tree
from bench.helpers.size import sized, status_for_budget
from peerwatch.probes.agent.sender import Sender

HERE = Path(__file__).resolve().parent.parent
MB = 1 << 20
PROBE_EVERY_S = 0.25
PROBE_TARGET_S = 1.0
GROWTH_TARGET_MB = 100.0
SETTLED_TARGET_MB = 20.0
CHUNK = 64 << 10
FAILED: list[str] = []  # checks (not timings) the "after" tree failed


def parse(argv: list[str]) -> argparse.Namespace:
    p = compare_parser(__doc__, __file__)
    p.add_argument("--database", choices=("sqlite", "postgresql"), default="sqlite",
                   help="the server's database: SQLite in a temporary folder, or a throwaway "
                   "database on the shared PostgreSQL (default: sqlite)")
    p.add_argument("--posters", type=int, default=sized(40, 4),
                   help="connections sending a report's body at 1 byte/s (default: 40)")
    p.add_argument("--probe-s", type=float, default=sized(5.0, 1.0),
                   help="seconds a real probe posts beside them (default: 5)")
    p.add_argument("--body-timeout-s", type=float, default=sized(10.0, 2.0),
                   help="PEERWATCH_BODY_TIMEOUT_S given to the server (default: 10)")
    p.add_argument("--header-clients", type=int, default=sized(100, 6),
                   help="connections sending one unfinished header (default: 100)")
    p.add_argument("--header-mb", type=float, default=sized(8.0, 1.0),
                   help="MB of header each sends (default: 8)")
    p.add_argument("--header-s", type=float, default=sized(60.0, 10.0),
                   help="longest the header clients send (default: 60)")
    p.add_argument("--settle-s", type=float, default=sized(5.0, 1.0),
                   help="seconds after they closed before RSS is read again (default: 5)")
    return p.parse_args(argv)


# --------------------------------------------------------------------------- answers


@dataclass
class Answer:
    status: int | None = None  # None: closed or reset without an answer, or none yet
    after_s: float | None = None


def status_of(data: bytes) -> int | None:
    parts = data.split(b" ", 2)
    return int(parts[1]) if len(parts) > 1 and data.startswith(b"HTTP/") else None


async def read_answer(reader: asyncio.StreamReader, answer: Answer, began: float) -> None:
    """The first bytes the server sends on this connection: its status, and when."""
    try:
        data = await reader.read(1024)
    except (ConnectionError, OSError):
        data = b""
    answer.status, answer.after_s = status_of(data), time.monotonic() - began


def close(writer: asyncio.StreamWriter) -> None:
    writer.transport.abort()


# --------------------------------------------------------------------------- phase 1


async def slow_poster(port: int, answer: Answer, stop: asyncio.Event) -> None:
    """A report's headers with the probe token, then its body at 1 byte/s until answered."""
    began = time.monotonic()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    head = (f"POST /api/v1/reports HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer {TOKEN}"
            "\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{")
    reading = asyncio.create_task(read_answer(reader, answer, began))
    try:
        writer.write(head.encode())
        while not reading.done() and not stop.is_set():
            await asyncio.wait([reading], timeout=1.0)
            if not reading.done():
                writer.write(b" ")
        if not reading.done():
            reading.cancel()
    except (ConnectionError, OSError):
        await reading
    finally:
        close(writer)


def probe_posts(base: str, seconds: float) -> list[tuple[int | None, float]]:
    """A real probe's reports, one every PROBE_EVERY_S: (status, seconds to its answer)."""
    reports, sender = Reports(), Sender(base, TOKEN, 30.0)
    answers, end = [], time.monotonic() + seconds
    while time.monotonic() < end:
        began = time.monotonic()
        result = sender.send(reports.new())
        answers.append((result.status, time.monotonic() - began))
        time.sleep(max(0.0, PROBE_EVERY_S - (time.monotonic() - began)))
    return answers


async def slow_posters(base: str, port: int, args: argparse.Namespace) -> dict[str, float]:
    stop, answers = asyncio.Event(), [Answer() for _ in range(args.posters)]
    tasks = [asyncio.create_task(slow_poster(port, a, stop)) for a in answers]
    await asyncio.sleep(2.0)  # all connected and sending, past the door's count of arrivals
    probe = await asyncio.to_thread(probe_posts, base, args.probe_s)
    await asyncio.wait(tasks, timeout=args.body_timeout_s + 10.0)
    stop.set()
    await asyncio.gather(*tasks)
    ok = [s for status, s in probe if status is not None and 200 <= status < 300]
    cut = [a.after_s for a in answers if a.status == 408 and a.after_s is not None]
    return {"probe_2xx_share": len(ok) / len(probe), "probe_max_s": max(s for _, s in probe),
            "posters_answered_share": sum(a.status in (408, 429) for a in answers) / len(answers),
            "posters_408_share": len(cut) / len(answers),
            "posters_429_share": sum(a.status == 429 for a in answers) / len(answers),
            "posters_cut_after_s": statistics.median(cut) if cut else float("nan")}


# --------------------------------------------------------------------------- phase 2


@dataclass
class Flood:
    sent: list[int] = field(default_factory=list)
    answers: list[Answer] = field(default_factory=list)


async def big_header(port: int, size: int, answer: Answer, flood: Flood, index: int,
                     hold: asyncio.Event) -> None:
    """One request whose single header grows to `size` bytes and never ends."""
    began = time.monotonic()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError:
        return
    reading = asyncio.create_task(read_answer(reader, answer, began))
    chunk = b"a" * CHUNK
    try:
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: bench\r\nX-Fill: ")
        while flood.sent[index] < size and not reading.done() and not hold.is_set():
            writer.write(chunk)
            await writer.drain()
            flood.sent[index] += len(chunk)
        await asyncio.wait([reading, asyncio.create_task(hold.wait())],
                           return_when=asyncio.FIRST_COMPLETED)
    except (ConnectionError, OSError):
        pass
    finally:
        close(writer)
        if not reading.done():
            reading.cancel()


def rss_mb(pid: int) -> float:
    return psutil.Process(pid).memory_info().rss / MB


async def sample_peak(pid: int, done: asyncio.Event) -> float:
    peak = rss_mb(pid)
    while not done.is_set():
        peak = max(peak, rss_mb(pid))
        await asyncio.sleep(0.05)
    return peak


async def big_headers(pid: int, port: int, args: argparse.Namespace) -> dict[str, float]:
    base_mb, size = rss_mb(pid), int(args.header_mb * MB)
    flood = Flood([0] * args.header_clients, [Answer() for _ in range(args.header_clients)])
    hold, done = asyncio.Event(), asyncio.Event()
    sampler = asyncio.create_task(sample_peak(pid, done))
    tasks = [asyncio.create_task(big_header(port, size, a, flood, i, hold))
             for i, a in enumerate(flood.answers)]
    end = time.monotonic() + args.header_s
    while time.monotonic() < end and not all(  # each refused, or all of its header sent
            a.status is not None or flood.sent[i] >= size for i, a in enumerate(flood.answers)):
        await asyncio.sleep(0.1)
    await asyncio.sleep(1.0)  # held open a moment at their peak
    hold.set()
    await asyncio.gather(*tasks)
    await asyncio.sleep(args.settle_s)
    done.set()
    peak = await sampler
    statuses = [a.status for a in flood.answers]
    return {"rss_before_mb": base_mb, "rss_growth_mb": peak - base_mb,
            "rss_after_growth_mb": rss_mb(pid) - base_mb,
            "headers_431_share": statuses.count(431) / len(statuses),
            "headers_429_share": statuses.count(429) / len(statuses),
            "header_mb_sent": sum(flood.sent) / MB}


# --------------------------------------------------------------------------- the run


def run_one(tree: Path, args: argparse.Namespace) -> dict[str, float] | None:
    with tempfile.TemporaryDirectory(prefix="peerwatch-hostile-") as tmp, \
            database(args.database, Path(tmp)) as url:
        if url is None:
            return None  # "postgresql: skipped" was said
        env = {"PEERWATCH_BODY_TIMEOUT_S": str(args.body_timeout_s),
               "PEERWATCH_MAX_CONNECTIONS_PER_ADDRESS": ""}  # empty: the server's default
        with serve_tree(tree, url, Path(tmp), env) as (base, pid):
            port = int(base.rsplit(":", 1)[1])
            figures = asyncio.run(slow_posters(base, port, args))
            figures |= asyncio.run(big_headers(pid, port, args))
    return figures


@contextmanager
def database(kind: str, folder: Path) -> Iterator[str | None]:
    if kind == "sqlite":
        yield f"sqlite:///{folder}/hostile.db"
        return
    from bench.ingest import postgres_url  # it imports the app's test client: only here

    with postgres_url() as url:
        yield url


TARGETS = {"probe_2xx_share": ("= 1", lambda v: v == 1.0),
           "probe_max_s": (f"<= {PROBE_TARGET_S:g}", lambda v: v <= PROBE_TARGET_S),
           "posters_answered_share": ("= 1", lambda v: v == 1.0),
           "rss_growth_mb": (f"< {GROWTH_TARGET_MB:g}", lambda v: v < GROWTH_TARGET_MB),
           "rss_after_growth_mb": (f"<= {SETTLED_TARGET_MB:g}",
                                   lambda v: v <= SETTLED_TARGET_MB)}
CHECKS = ("probe_2xx_share", "posters_answered_share")  # not timings: fail at any size
TIMED = ("probe_max_s", "rss_growth_mb", "rss_after_growth_mb")


def report(before: dict[str, float] | None, after: dict[str, float]) -> None:
    print(f"{'figure':22} {'before':>9} {'after':>9} {'target':>8} {'after/target':>13}  met")
    for name, value in after.items():
        was = before.get(name) if before else None
        target, met = TARGETS.get(name, ("", None))
        bound = float(target.split()[-1]) if target else 0.0
        ratio = f"{value / bound:.2f}" if bound else "-"
        verdict = "" if met is None else ("yes" if met(value) else "NO")
        print(f"{name:22} {_fmt(was):>9} {_fmt(value):>9} {target:>8} {ratio:>13}  {verdict}")
    FAILED.extend(n for n in CHECKS if not TARGETS[n][1](after[n]))
    if after["headers_431_share"] + after["headers_429_share"] < 1.0:
        FAILED.append("headers_431_share")
    if not all(TARGETS[n][1](after[n]) for n in TIMED):
        FAILED.append("timing")


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def main(argv: list[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    print(f"# {args.posters} slow posters (1 byte/s, body deadline {args.body_timeout_s:g} s)"
          f" beside a real probe for {args.probe_s:g} s; then {args.header_clients} clients "
          f"sending {args.header_mb:g} MB of one header; RSS of the server process")
    before_and_after(args, HERE, run_one, report)
    checks = [name for name in FAILED if name != "timing"]
    if checks:
        print(f"FAILED: {', '.join(checks)}")
        return 1
    return status_for_budget("timing" not in FAILED)


if __name__ == "__main__":
    raise SystemExit(main())
