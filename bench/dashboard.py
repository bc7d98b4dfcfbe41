"""Dashboard drawing time in headless Chromium: the host page of an 8-GPU host and the fleet
page of 1000 hosts, from navigation until every chart has drawn (`main[data-ready]`).

The server is the real app on SQLite (uvicorn on a loopback port). It holds 1000 simulated
hosts, presets dealt in turn like the demo (hgx8, h200x2, mesh4, pcie4), one probe pass
each; ten of them have faults (links down, a slow pair) so the fleet page has something to
sort up. Reports are stored through the ingest service directly (the same code the POST route
runs, without HTTP), which takes a while on a busy machine; the timing starts after.

Two figures per page:
- cold: a new tab loads the page (plotly.js from the server, 4.8 MB, parsed and compiled);
- warm: the page is already open and the route changes (a click in the dashboard).
The fleet figures include the server answering GET /api/v1/hosts for 1000 hosts, which is
printed on its own too.

References (stated budgets): the host page should draw within 1 s and the fleet page of 1000
hosts within 3 s, warm; a cold first load within 3 s and 5 s. Ratios below 1 are in budget.
"""

from __future__ import annotations

import socket
import statistics
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from app.config import Settings
from app.db import make_engine, make_sessionmaker, upgrade_to_head
from app.main import create_app
from app.services.ingest import ingest
from probes.faults import BandwidthFactor, LinksDown
from probes.report import Report, TestName
from probes.simulated import SimulatedFabric
from probes.sweep import SweepOptions, build_report

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
HOSTS = 1000
PRESETS = ("hgx8", "h200x2", "mesh4", "pcie4")
FAULTY_EVERY = 100  # one host in a hundred has faults
BUDGET_S = {"host": 1.0, "fleet": 3.0}
COLD_BUDGET_S = {"host": 3.0, "fleet": 5.0}
RUNS = 3


def host_name(i: int) -> str:
    return f"{PRESETS[i % len(PRESETS)]}-{i // len(PRESETS) + 1:04d}"


def template_reports() -> dict[tuple[str, bool], Report]:
    """One probe pass per preset, healthy and faulty, to be copied under many names."""
    options = SweepOptions(tests=(TestName.CE_WRITE, TestName.CE_BIDIR, TestName.LATENCY),
                           timeout_s=None)
    faults = {"hgx8": (LinksDown(gpu=3, count=2), BandwidthFactor(1, 2, 0.5)),
              "h200x2": (BandwidthFactor(0, 1, 0.5),), "mesh4": (LinksDown(gpu=0, count=4),),
              "pcie4": (BandwidthFactor(0, 1, 0.4),)}
    out = {}
    for preset in PRESETS:
        for faulty in (False, True):
            fabric = SimulatedFabric(preset, seed=7, faults=faults[preset] if faulty else ())
            out[(preset, faulty)] = build_report(fabric, options=options)
    return out


def seed(settings: Settings, hosts: int) -> float:
    """Store `hosts` hosts; returns the seconds it took."""
    started = time.perf_counter()
    engine = make_engine(settings)
    upgrade_to_head(engine)
    sessions = make_sessionmaker(engine)
    templates = template_reports()
    now = datetime.now(UTC)
    for i in range(hosts):
        preset = PRESETS[i % len(PRESETS)]
        base = templates[(preset, i % FAULTY_EVERY == 0)]
        report = base.model_copy(update={
            "report_id": uuid.uuid4(),
            "host": base.host.model_copy(update={"hostname": host_name(i)})})
        with sessions() as session:
            ingest(session, report, settings, now)
    engine.dispose()
    return time.perf_counter() - started


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serving(settings: Settings) -> Iterator[str]:
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(settings), host="127.0.0.1", port=port,
                                           log_level="warning"))
    thread = threading.Thread(target=server.run, name="bench-dashboard-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the benchmark's server did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


DRAWN = """([view, hash]) => { const m = document.querySelector('main');
  return m.dataset.ready === view && m.dataset.drawn === hash; }"""


def wait_drawn(page: Any, view: str, hash_: str, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while not page.evaluate(DRAWN, [view, hash_]):
        error = page.evaluate("document.querySelector('main').dataset.error")
        if error:
            raise RuntimeError(f"the {view} page failed: {error}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"the {view} page did not draw within {timeout_s:g} s")
        page.wait_for_timeout(10)


def cold(context: Any, url: str, view: str, hash_: str) -> float:
    page = context.new_page()
    started = time.perf_counter()
    page.goto(f"{url}/{hash_}")
    wait_drawn(page, view, hash_)
    elapsed = time.perf_counter() - started
    page.close()
    return elapsed


def warm(page: Any, view: str, hash_: str, away: str) -> float:
    page.evaluate("h => { location.hash = h; }", away)
    wait_drawn(page, "alerts", away)
    started = time.perf_counter()
    page.evaluate("h => { location.hash = h; }", hash_)
    wait_drawn(page, view, hash_)
    return time.perf_counter() - started


def measure(url: str) -> dict[str, dict[str, float]]:
    from playwright.sync_api import sync_playwright

    routes = {"host": "#/host/hgx8-0002?test=ce_write&pair=1-2", "fleet": "#/fleet"}
    found: dict[str, dict[str, float]] = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1440, "height": 1000})
        page = context.new_page()
        page.goto(f"{url}/#/alerts")
        wait_drawn(page, "alerts", "#/alerts")
        for view, hash_ in routes.items():
            cold_s = [cold(context, url, view, hash_) for _ in range(RUNS)]
            warm_s = [warm(page, view, hash_, "#/alerts") for _ in range(RUNS)]
            found[view] = {"cold": statistics.median(cold_s), "warm": statistics.median(warm_s)}
        browser.close()
    return found


def api_seconds(url: str, path: str) -> float:
    times = []
    with httpx.Client(base_url=url, timeout=120) as client:
        for _ in range(RUNS):
            started = time.perf_counter()
            client.get(path).raise_for_status()
            times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> int:
    if not CHROMIUM.is_file():
        print(f"skipped: no Chromium at {CHROMIUM} (apt-get install chromium)")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(data_dir=Path(tmp))
        seeded = seed(settings, HOSTS)
        print(f"seeded {HOSTS} hosts (one probe pass each) in {seeded:.1f} s")
        with serving(settings) as url:
            hosts_api = api_seconds(url, "/api/v1/hosts")
            figures = measure(url)
    print(f"GET /api/v1/hosts with {HOSTS} hosts: {hosts_api * 1000:.0f} ms")
    print("page                      cold ms   budget  ratio   warm ms   budget  ratio")
    for view, label in (("host", "host page, 8-GPU host"), ("fleet", f"fleet page, {HOSTS} hosts")):
        f = figures[view]
        print(f"{label:<24} {f['cold'] * 1000:8.0f} {COLD_BUDGET_S[view] * 1000:8.0f} "
              f"{f['cold'] / COLD_BUDGET_S[view]:6.2f} {f['warm'] * 1000:9.0f} "
              f"{BUDGET_S[view] * 1000:8.0f} {f['warm'] / BUDGET_S[view]:6.2f}")
    print(f"(median of {RUNS} runs; headless Chromium on this machine; ratio = time / budget)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
