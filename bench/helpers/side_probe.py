"""A light client in a process of its own, beside a bench's load: `/healthz` every 0.1 s and
one real sweep every 0.25 s (Retry-After not honoured), each timed.

The load generators run hundreds of probes in one Python event loop that is itself CPU-bound
on a loaded machine, so what they time includes their own loop's lag; this process has
nothing else to do, so its figures are the server's answer time plus the network, as an
operator's `curl` or a load balancer's check would see them. Run by bench/overload.py and
bench/fleet.py as `python -m bench.helpers.side_probe BASE SECONDS`; prints one JSON line:
{"healthz_ms": [...], "refused_429_ms": [...], "refused_503_ms": [...], "accepted_ms": [...],
"own_lag_ms": [...], "other": {status: n}}; `own_lag_ms` is how late its own sleeps woke
(this process waiting for a core), which every figure it times includes too.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections import Counter
from datetime import UTC, datetime

import httpx

from bench.helpers.fleet_load import HEADERS, as_sent, learn_gzip, templates

HEALTHZ_EVERY_S, POST_EVERY_S = 0.1, 0.25
HOST = "side-probe-0"


async def _healthz(http: httpx.AsyncClient, base: str, end: float, out: list[float],
                   own_lag: list[float]) -> None:
    while time.monotonic() < end:
        started = time.perf_counter()
        try:
            await http.get(f"{base}/healthz")
        except httpx.HTTPError:
            pass
        out.append((time.perf_counter() - started) * 1000)
        slept = time.perf_counter()
        await asyncio.sleep(HEALTHZ_EVERY_S)
        # how late this process woke: its own wait for a core, in every figure it times
        own_lag.append(max(0.0, time.perf_counter() - slept - HEALTHZ_EVERY_S) * 1000)


async def _posts(http: httpx.AsyncClient, base: str, end: float, out: dict) -> None:
    sweep = templates()["sweep"]
    while time.monotonic() < end:
        headers, plain = {**HEADERS, "X-Peerwatch-Host": HOST}, sweep.body(HOST, datetime.now(UTC))
        started = time.perf_counter()
        body = as_sent(base, plain, headers)  # as a probe sends it (compressing counts)
        try:
            response = await http.post(f"{base}/api/v1/reports", content=body, headers=headers)
            status = response.status_code
            learn_gzip(base, response)
        except httpx.HTTPError:
            status = 0
        ms = (time.perf_counter() - started) * 1000
        key = {429: "refused_429_ms", 503: "refused_503_ms", 200: "accepted_ms",
               201: "accepted_ms"}
        if status in key:
            out[key[status]].append(ms)
        else:
            out["other"][str(status)] += 1
        await asyncio.sleep(POST_EVERY_S)


async def _run(base: str, seconds: float) -> dict:
    out: dict = {"healthz_ms": [], "refused_429_ms": [], "refused_503_ms": [],
                 "accepted_ms": [], "own_lag_ms": [], "other": Counter()}
    end = time.monotonic() + seconds
    async with httpx.AsyncClient(timeout=30) as http:
        await asyncio.gather(_healthz(http, base, end, out["healthz_ms"], out["own_lag_ms"]),
                             _posts(http, base, end, out))
    return out


def start(base: str, seconds: float) -> subprocess.Popen[str]:
    """Run beside the caller's load; `result(proc)` once the load is over."""
    return subprocess.Popen([sys.executable, "-m", "bench.helpers.side_probe", base, str(seconds)],
                            stdout=subprocess.PIPE, text=True)


def result(proc: subprocess.Popen[str]) -> dict:
    out, _ = proc.communicate(timeout=120)
    return json.loads(out.strip().splitlines()[-1])


if __name__ == "__main__":
    print(json.dumps(asyncio.run(_run(sys.argv[1], float(sys.argv[2])))))
