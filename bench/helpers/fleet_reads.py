"""Read figures for bench/fleet.py: the read API, /metrics and the fleet page in Chromium.

Each endpoint is called `repeat` times, one at a time, alternating the two servers (as a
load balancer would), within a time cap per endpoint (a slow endpoint at 1000 hosts gets
fewer calls: the figure says how many). Client wall time is what counts: that is what a
scheduler or a dashboard waits for.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from bench.helpers.chromium import CHROMIUM, CHROMIUM_ARGS, wait_drawn


@dataclass
class Timed:
    label: str
    ms: list[float]
    size_bytes: int = 0
    status: int = 200

    def pct(self, q: float) -> float:
        ordered = sorted(self.ms)
        return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def endpoints(host: str) -> list[tuple[str, str, dict[str, Any]]]:
    now = datetime.now(UTC)
    week = {"src": 0, "dst": 1, "test": "ce_write",
            "since": (now - timedelta(days=7)).isoformat(), "until": now.isoformat()}
    return [
        ("/api/v1/hosts", "/api/v1/hosts", {}),
        ("/api/v1/scheduler/hosts", "/api/v1/scheduler/hosts", {}),
        ("host matrix", f"/api/v1/hosts/{host}/matrix", {}),
        ("host topology", f"/api/v1/hosts/{host}/topology", {}),
        ("host health", f"/api/v1/hosts/{host}/health", {}),
        ("7-day pair series", f"/api/v1/hosts/{host}/series", week),
        ("placement (k=4, ring)", "/api/v1/scheduler/placement",
         {"host": host, "gpus": 4, "pattern": "ring"}),
        ("server /metrics", "/metrics", {}),
    ]


def time_endpoint(bases: list[str], label: str, path: str, params: dict[str, Any],
                  repeat: int, cap_s: float) -> Timed:
    out = Timed(label, [])
    deadline = time.monotonic() + cap_s
    with httpx.Client(timeout=600) as http:
        for i in range(repeat):
            started = time.perf_counter()
            r = http.get(f"{bases[i % len(bases)]}{path}", params=params)
            out.ms.append((time.perf_counter() - started) * 1000)
            out.size_bytes, out.status = len(r.content), r.status_code
            if time.monotonic() > deadline:
                break
    return out


def read_figures(bases: list[str], host: str, repeat: int, cap_s: float) -> list[Timed]:
    return [time_endpoint(bases, label, path, params, repeat, cap_s)
            for label, path, params in endpoints(host)]


def fleet_page(base: str, runs: int) -> Timed | None:
    """The fleet page drawn in headless Chromium: a new tab until every chart has drawn."""
    if not CHROMIUM.is_file():
        return None
    from playwright.sync_api import sync_playwright

    out = Timed("fleet page drawn (Chromium)", [])
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1440, "height": 1000})
        for _ in range(runs):
            page = context.new_page()
            started = time.perf_counter()
            page.goto(f"{base}/?refresh=86400#/fleet")
            wait_drawn(page, "fleet", "#/fleet")
            out.ms.append((time.perf_counter() - started) * 1000)
            page.close()
        browser.close()
    return out


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")
