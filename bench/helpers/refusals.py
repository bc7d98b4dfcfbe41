"""How fast a saturated server says no: bursts of sweep reports at `peerwatch serve` (a
subprocess) with one ingest slot and no queue; the refused ones' latency, client side, with
the bodies plain and gzip-compressed as a current probe sends them (bursts alternating).

A refusal is decided from the headers, but an HTTP/1.1 client reads the answer only once it
has sent the whole body: a plain 8-GPU sweep (~250 kB) is more than uvicorn buffers for a
request nobody reads (64 kB) and than the socket takes at once, so some refused clients
wait on TCP to take the rest; the gzip body (~25 kB) goes in one write. So a plain body's
refusal is slow on the client's clock where a gzip one's is not, while the server's own
time is the same.

Reference: the fleet's target of 50 ms for a 429/503 past capacity.
"""

from __future__ import annotations

import gzip
import statistics
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from bench.helpers.serve import serve_process
from peerwatch.app.runtime.config import Settings
from peerwatch.probes.agent.sender import GZIP_LEVEL
from peerwatch.probes.report import Report

BURST = 12
BURSTS = 3  # of each kind of body, alternating
TARGET_MS = 50.0


def refusal_latency(settings: Settings, report: Report, token: str) -> None:
    env = {"PEERWATCH_INGEST_CONCURRENCY": "1", "PEERWATCH_INGEST_QUEUE": "0",
           "PEERWATCH_PROBE_TOKENS": token}
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    refused: dict[str, list[float]] = {"plain": [], "gzip": []}
    codes: set[int] = set()
    with tempfile.TemporaryDirectory() as tmp, \
            serve_process(settings.database_url, Path(tmp), env) as url, \
            httpx.Client(timeout=60, limits=httpx.Limits(max_connections=2 * BURST)) as client:
        def post(body: bytes, compressed: bool) -> tuple[int, float, str | None]:
            sent = {**headers, "Content-Encoding": "gzip"} if compressed else headers
            t = time.perf_counter()
            r = client.post(f"{url}/api/v1/reports", content=body, headers=sent)
            return r.status_code, (time.perf_counter() - t) * 1000, r.headers.get("retry-after")

        for _ in range(BURSTS):
            for kind in refused:
                bodies = [report.model_copy(update={"report_id": uuid.uuid4()})
                          .model_dump_json().encode() for _ in range(BURST)]
                if kind == "gzip":
                    bodies = [gzip.compress(b, GZIP_LEVEL, mtime=0) for b in bodies]
                with ThreadPoolExecutor(BURST) as pool:
                    answers = list(pool.map(post, bodies, [kind == "gzip"] * BURST))
                codes |= {code for code, _, _ in answers}
                refused[kind] += [ms for code, ms, after in answers
                                  if code in (429, 503) and after]
    for kind, times in refused.items():
        if not times:
            print(f"  {BURSTS} bursts of {BURST} ({kind}): nothing refused (codes {sorted(codes)})")
            continue
        times.sort()
        print(f"  {BURSTS} bursts of {BURST} sweep reports ({kind} bodies), 1 slot, no queue: "
              f"{len(times)} refused with Retry-After; refusal latency median "
              f"{statistics.median(times):.1f} ms, p90 {times[int(0.9 * len(times))]:.1f} ms, "
              f"max {times[-1]:.1f} ms = {times[-1] / TARGET_MS:.0%} of the "
              f"{TARGET_MS:.0f} ms target")
