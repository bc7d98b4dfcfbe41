"""What one dashboard page costs, in figures that do not depend on how loaded the machine is:
the requests it made before it drew (how many, bytes over the wire), the server's CPU
seconds spent answering them, and the browser's script and layout time (Chromium's own
counters, through the DevTools protocol).

The server runs in threads of the bench's own process (app/demo/server.py `ServerThread`)
and Playwright's sync client in its main thread, so the server's CPU is the process's CPU
less the main thread's (`time.process_time() - time.thread_time()`): it counts the request
handlers and whatever else the server does meanwhile (its periodic judging, if it ran).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

# Chromium counts 300 bytes of headers for every response and reports a 304 (a copy it
# revalidated) as status 200 with no body over the wire: transferSize < body + 300.
RESOURCES = """() => performance.getEntriesByType('resource').map(e => ({
  path: new URL(e.name).pathname + new URL(e.name).search, start: e.startTime,
  duration: e.duration, bytes: e.transferSize, body: e.encodedBodySize,
  revalidated: e.encodedBodySize > 0 && e.transferSize > 0
    && e.transferSize < e.encodedBodySize + 300 }))"""
NAVIGATION = """() => { const n = performance.getEntriesByType('navigation')[0];
  return n ? n.transferSize : 0; }"""


def server_cpu_now() -> float:
    """CPU seconds of every thread of this process but the calling (main) one."""
    return time.process_time() - time.thread_time()


@dataclass
class PageCost:
    requests: int = 0
    api_requests: int = 0
    bytes: int = 0  # over the wire, the page itself included
    server_cpu_s: float = 0.0
    script_s: float = 0.0  # Chromium's ScriptDuration
    layout_s: float = 0.0  # LayoutDuration + RecalcStyleDuration
    resources: list[dict[str, Any]] = field(default_factory=list)


def browser_metrics(cdp: Any) -> dict[str, float]:
    return {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}


def page_cost(page: Any, cdp: Any, cpu_before: float) -> PageCost:
    """The cost of what `page` has loaded so far (its CDP session `cdp` had Performance
    enabled before the navigation; `cpu_before` is `server_cpu_now()` from then)."""
    server_cpu = server_cpu_now() - cpu_before
    found = page.evaluate(RESOURCES)
    metrics = browser_metrics(cdp)
    return PageCost(
        requests=len(found) + 1,
        api_requests=sum(1 for r in found if r["path"].startswith("/api/")),
        bytes=int(page.evaluate(NAVIGATION) + sum(r["bytes"] for r in found)),
        server_cpu_s=server_cpu, script_s=metrics.get("ScriptDuration", 0.0),
        layout_s=metrics.get("LayoutDuration", 0.0) + metrics.get("RecalcStyleDuration", 0.0),
        resources=found)


def print_profile(cost: PageCost, label: str) -> None:
    """The requests of one cold load, in the order they started (the profile)."""
    print(f"profile of one cold load, {label}: {cost.requests} requests "
          f"({cost.api_requests} API), {cost.bytes / 1024:.0f} KiB over the wire, "
          f"server CPU {cost.server_cpu_s * 1000:.0f} ms, browser script "
          f"{cost.script_s * 1000:.0f} ms, style+layout {cost.layout_s * 1000:.0f} ms")
    print("   start ms   took ms   KiB  request")
    for r in sorted(cost.resources, key=lambda r: r["start"]):
        print(f"  {r['start']:9.0f} {r['duration']:9.0f} {r['bytes'] / 1024:5.0f}  "
              f"{r['path'][:90]}")


UPDATES = "() => Number(document.querySelector('main').dataset.updates || 0)"


@dataclass
class PollCost:
    refreshes: int
    api_requests: int
    not_modified: int
    bytes: int
    server_cpu_s: float

    def per_refresh(self, value: float) -> float:
        return value / max(1, self.refreshes)


def polling_cost(context: Any, url: str, hash_: str, refreshes: int = 8) -> PollCost:
    """An open page refreshing itself every second for `refreshes` refreshes (the server's
    data does not change meanwhile: what a quiet fleet costs a page left open)."""
    page = context.new_page()
    page.goto(f"{url}/?refresh=1{hash_}")
    # (no wait_for_function: it evals its string, which the page's CSP refuses)
    while not page.evaluate("() => document.querySelector('main').dataset.ready") or \
            page.evaluate("() => Boolean(document.querySelector('main [data-pending]'))"):
        page.wait_for_timeout(20)
    start = page.evaluate(UPDATES) + 1
    while page.evaluate(UPDATES) < start:  # from the end of a refresh on
        page.wait_for_timeout(20)
    page.evaluate("performance.setResourceTimingBufferSize(100000); "
                  "performance.clearResourceTimings()")
    cpu = server_cpu_now()
    while page.evaluate(UPDATES) < start + refreshes:
        page.wait_for_timeout(20)
    spent = server_cpu_now() - cpu
    found = [r for r in page.evaluate(RESOURCES) if r["path"].startswith("/api/")]
    page.close()
    return PollCost(refreshes, len(found), sum(1 for r in found if r["revalidated"]),
                    int(sum(r["bytes"] for r in found)), spent)


def print_polling(cost: PollCost, label: str, every_s: float = 15) -> None:
    per = 60 / every_s
    print(f"{label}, left open (refresh every {every_s:g} s, nothing new on the server): "
          f"{cost.per_refresh(cost.api_requests) * per:.0f} API requests a minute "
          f"({cost.per_refresh(cost.not_modified) * per:.0f} of them 304), "
          f"{cost.per_refresh(cost.bytes) * per / 1024:.1f} KiB a minute, server CPU "
          f"{cost.per_refresh(cost.server_cpu_s) * per * 1000:.0f} ms a minute "
          f"(over {cost.refreshes} refreshes)")
