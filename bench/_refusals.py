"""How fast a saturated server says no: a burst of sweep reports at `peerwatch serve` (a
subprocess) with one ingest slot and no queue; the refused ones' latency, client side.

Reference: issue 10's 50 ms for a 429/503 past capacity.
"""

from __future__ import annotations

import statistics
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from app.config import Settings
from bench._serve import serve_process
from probes.report import Report

BURST = 12
TARGET_MS = 50.0


def refusal_latency(settings: Settings, report: Report, token: str) -> None:
    env = {"PEERWATCH_INGEST_CONCURRENCY": "1", "PEERWATCH_INGEST_QUEUE": "0",
           "PEERWATCH_PROBE_TOKENS": token}
    bodies = [report.model_copy(update={"report_id": uuid.uuid4()}).model_dump_json()
              for _ in range(BURST)]
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    with tempfile.TemporaryDirectory() as tmp, \
            serve_process(settings.database_url, Path(tmp), env) as url, \
            httpx.Client(timeout=60) as client:
        def post(body: str) -> tuple[int, float, str | None]:
            t = time.perf_counter()
            r = client.post(f"{url}/api/v1/reports", content=body, headers=headers)
            return r.status_code, (time.perf_counter() - t) * 1000, r.headers.get("retry-after")

        with ThreadPoolExecutor(BURST) as pool:
            answers = list(pool.map(post, bodies))
    refused = sorted(ms for code, ms, after in answers if code in (429, 503) and after)
    codes = sorted({code for code, _, _ in answers})
    if not refused:
        print(f"  burst of {BURST}: nothing refused (codes {codes})")
        return
    print(f"  burst of {BURST} sweep reports, 1 slot, no queue: {len(refused)} refused "
          f"with Retry-After (codes {codes}); refusal latency median "
          f"{statistics.median(refused):.1f} ms, max {refused[-1]:.1f} ms = "
          f"{refused[-1] / TARGET_MS:.0%} of the {TARGET_MS:.0f} ms target")
