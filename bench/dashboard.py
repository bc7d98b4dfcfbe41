"""Dashboard drawing time in headless Chromium: the host page of an 8-GPU host, the Placement
page (opened bare: it picks a host that can place the default k itself) and the fleet page of
1000 hosts, from navigation until every chart has drawn (`main[data-ready]`).
`PEERWATCH_BENCH_HOSTS=200` seeds fewer hosts, for a quicker run of the first two.

The server is the real app on SQLite (uvicorn on a loopback port). It holds 1000 simulated
hosts, presets dealt in turn like the demo (hgx8, h200x2, mesh4, pcie4), one probe pass
each; 40 of them have faults (links down, a slow pair) so the fleet page has something to
sort up. Reports are stored through the ingest service directly and each host is judged (the
same code the POST route runs, without HTTP), which takes a while on a busy machine; the
timing starts after.

Two figures per page:
- cold: a new tab loads the page (plotly.js, 1.5 MB, from the browser's cache, parsed and
  compiled: Playwright's contexts keep no V8 code cache);
- warm: the page is already open and the route changes (a click in the dashboard).
Each total is split into the time the page waited for the API (the slowest request, from
the browser's Resource Timing) and the rest, spent in the browser (scripts, layout, Plotly).

References (stated budgets): the host page should draw within 1 s and the fleet page of 1000
hosts within 3 s, warm; a cold first load (a new tab) within 1.5 s for the host and Placement
pages and 5 s for the fleet. Ratios below 1 are in budget. A host page left open should cost
at most 16 API requests and 10 KiB a minute while nothing changes on the server.

Before -> after (`--before REF`, main by default; `--before none` skips it): REF's tree
(`git archive REF`) and this one, each seeded alike and served by its own process
(bench/helpers/dashboard_trees.py), the host page's cold load timed alternately on each, then
each left open: the two figures issue 40 set, the cold host page and the open page's cost.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.helpers.chromium import CHROMIUM, CHROMIUM_ARGS, wait_drawn
from bench.helpers.cli import parser
from bench.helpers.dashboard_trees import before_and_after
from bench.helpers.page_profile import (
    PageCost,
    PollCost,
    page_cost,
    polling_cost,
    print_polling,
    print_profile,
    server_cpu_now,
)
from bench.helpers.size import sized
from peerwatch.app.alerting.settings import AlertingSettings
from peerwatch.app.demo.server import ServerThread
from peerwatch.app.ingest.rows import ingest
from peerwatch.app.judging.service import AlertingService
from peerwatch.app.judging.sessions import make_sessionmaker
from peerwatch.app.main import create_app
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.db import make_engine, upgrade_to_head
from peerwatch.probes.report import Report, TestName
from peerwatch.probes.sim.faults import BandwidthFactor, LinksDown
from peerwatch.probes.sim.simulated import SimulatedFabric
from peerwatch.probes.sweep import SweepOptions, build_report

HOSTS = int(os.environ.get("PEERWATCH_BENCH_HOSTS", sized("1000", "8")))
PRESETS = ("hgx8", "h200x2", "mesh4", "pcie4")
FAULTY_PER_HUNDRED = 4  # 4 hosts in a hundred (one of each preset) have faults
BUDGET_S = {"host": 1.0, "placement": 1.0, "fleet": 3.0}
COLD_BUDGET_S = {"host": 1.5, "placement": 1.5, "fleet": 5.0}
# the fleet's API answer alone can take a minute
RUNS = sized({"host": 3, "placement": 3, "fleet": 1}, {"host": 1, "placement": 1, "fleet": 1})
ROUTES = {"host": "#/host/hgx8-0002?test=ce_write&pair=1-2", "placement": "#/placement",
          "fleet": "#/fleet"}
LABELS = {"host": "host page, 8-GPU host", "placement": "placement page",
          "fleet": f"fleet page, {HOSTS} hosts"}


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
    # Judged as the POST route does after ingest: readers read the stored verdicts.
    alerting = AlertingService(sessions, settings, AlertingSettings())
    for i in range(hosts):
        preset = PRESETS[i % len(PRESETS)]
        base = templates[(preset, i % 100 < FAULTY_PER_HUNDRED)]
        report = base.model_copy(update={
            "report_id": uuid.uuid4(),
            "host": base.host.model_copy(update={"hostname": host_name(i)})})
        with sessions() as session:
            ingest(session, report, settings, now)
        alerting.evaluate_host(host_name(i))
    alerting.close()
    engine.dispose()
    return time.perf_counter() - started


@contextmanager
def serving(settings: Settings) -> Iterator[str]:
    # No periodic round: it would re-judge every seeded host (stale after a minute) in the
    # middle of the timings and inside the server-CPU figures (bench/helpers/page_profile.py).
    os.environ.setdefault("PEERWATCH_ALERT_EVAL_INTERVAL_S", "0")
    with ServerThread(create_app(settings), port=0) as server:
        yield server.url


# the host page draws what fits the screen first, then its lower panels (`data-pending`)
COMPLETE = "() => !document.querySelector('main [data-pending]')"


PLOTLY_MS = """() => performance.getEntriesByType('resource')
  .filter(e => e.name.includes('/plotly-')).reduce((a, e) => Math.max(a, e.responseEnd), 0)"""

API_MS = """path => performance.getEntriesByType('resource')
  .filter(e => new URL(e.name).pathname.startsWith(path))
  .reduce((a, e) => Math.max(a, e.duration), 0)"""


@dataclass
class Timing:
    total_s: float
    api_s: float  # the slowest API request the page waited for
    cost: PageCost | None = None  # a cold load's requests, bytes and CPU (load-independent)
    complete_s: float | None = None  # until the panels drawn after the first view were too
    plotly_s: float | None = None  # until plotly.js was in hand (downloaded or from the cache)

    @property
    def browser_s(self) -> float:
        return max(0.0, self.total_s - self.api_s)


def cold(context: Any, url: str, view: str, hash_: str) -> Timing:
    page = context.new_page()
    cdp = context.new_cdp_session(page)
    cdp.send("Performance.enable")
    cpu = server_cpu_now()
    started = time.perf_counter()
    page.goto(f"{url}/?refresh=86400{hash_}")
    wait_drawn(page, view, hash_)
    elapsed = time.perf_counter() - started
    while not page.evaluate(COMPLETE):
        page.wait_for_timeout(10)
    complete = time.perf_counter() - started
    cost = page_cost(page, cdp, cpu)
    api = page.evaluate(API_MS, "/api/v1/") / 1000
    page.close()
    return Timing(elapsed, api, cost, complete)


def warm(page: Any, view: str, hash_: str, away: str) -> Timing:
    page.evaluate("h => { location.hash = h; }", away)
    wait_drawn(page, "alerts", away)
    page.evaluate("performance.clearResourceTimings()")
    started = time.perf_counter()
    page.evaluate("h => { location.hash = h; }", hash_)
    wait_drawn(page, view, hash_)
    elapsed = time.perf_counter() - started
    return Timing(elapsed, page.evaluate(API_MS, "/api/v1/") / 1000)


def median(timings: list[Timing]) -> Timing:
    """The median total and API time; the cost of the run with the median total."""
    middle = sorted(timings, key=lambda t: t.total_s)[len(timings) // 2]
    plotly = [t.plotly_s for t in timings if t.plotly_s is not None]
    return Timing(statistics.median(t.total_s for t in timings),
                  statistics.median(t.api_s for t in timings), middle.cost, middle.complete_s,
                  statistics.median(plotly) if plotly else None)


def measure(url: str) -> dict[str, dict[str, Timing]]:
    from playwright.sync_api import sync_playwright

    found: dict[str, dict[str, Timing]] = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1440, "height": 1000})
        page = context.new_page()
        page.goto(f"{url}/?refresh=86400#/alerts")
        wait_drawn(page, "alerts", "#/alerts")
        for view, hash_ in ROUTES.items():
            runs = RUNS[view]
            found[view] = {
                "cold": median([cold(context, url, view, hash_) for _ in range(runs)]),
                "warm": median([warm(page, view, hash_, "#/alerts") for _ in range(runs)]),
            }
            print(f"  measured the {view} page", flush=True)
        global POLLING
        POLLING = polling_cost(context, url, ROUTES["host"])
        browser.close()
    return found


POLLING: PollCost | None = None  # the host page left open


def report(figures: dict[str, dict[str, Timing]]) -> None:
    print("page                       how    total ms   API ms  browser ms   budget ms  ratio")
    for view, label in LABELS.items():
        for how, budgets in (("cold", COLD_BUDGET_S), ("warm", BUDGET_S)):
            t = figures[view][how]
            print(f"{label:<26} {how:<5} {t.total_s * 1000:9.0f} {t.api_s * 1000:8.0f} "
                  f"{t.browser_s * 1000:11.0f} {budgets[view] * 1000:11.0f} "
                  f"{t.total_s / budgets[view]:6.2f}")
    print("(median of runs; headless Chromium on this machine; API ms = the slowest API request "
          "the page waited for; browser ms = the rest: plotly.js, our modules, drawing; "
          "ratio = total / budget, below 1 is within budget)")
    print("cold loads, load-independent: page                requests  API  KiB  server CPU ms"
          "  script ms  style+layout ms")
    for view, label in LABELS.items():
        c = figures[view]["cold"].cost
        if c is not None:
            print(f"{label:>48} {c.requests:9d} {c.api_requests:4d} {c.bytes / 1024:5.0f} "
                  f"{c.server_cpu_s * 1000:14.0f} {c.script_s * 1000:10.0f} "
                  f"{c.layout_s * 1000:16.0f}")
    for view, label in LABELS.items():
        done = figures[view]["cold"].complete_s
        if done is not None:
            print(f"{label}, cold: every panel drawn (below the fold too) at {done * 1000:.0f} ms")
    if POLLING is not None:
        print_polling(POLLING, LABELS["host"])
    host = figures["host"]["cold"].cost
    if host is not None:
        print_profile(host, LABELS["host"])


COMPARED_RUNS = sized(5, 1)  # cold host loads on each tree, alternated
POLL_BUDGET = (16, 10.0)  # API requests, KiB a minute: a host page left open, nothing new


# When the page itself saw <main> drawn, and every panel too (ms since its navigation
# started), whatever the tree: a script polling the page (`wait_drawn`) waits while the
# page's thread draws the panels below the fold, so its own reading runs late by that.
DRAWN_HOOK = """(() => { const seen = () => { const m = document.querySelector('main');
  if (!m || !m.dataset.ready) return;
  window.__drawnAt ??= performance.now();
  if (!m.querySelector('[data-pending]')) window.__completeAt ??= performance.now(); };
  new MutationObserver(seen).observe(document, { subtree: true, attributes: true,
    attributeFilter: ['data-ready', 'data-pending'] }); })();"""


def cold_as_seen(context: Any, url: str, hash_: str) -> Timing:
    """A cold load of `hash_`, timed by the page (DRAWN_HOOK, in `context`)."""
    page = context.new_page()
    page.goto(f"{url}/?refresh=86400{hash_}")
    wait_drawn(page, "host", hash_)
    while not page.evaluate(COMPLETE):
        page.wait_for_timeout(10)
    drawn, complete = page.evaluate("() => [window.__drawnAt, window.__completeAt]")
    api = page.evaluate(API_MS, "/api/v1/") / 1000
    plotly = page.evaluate(PLOTLY_MS) / 1000
    page.close()
    return Timing(drawn / 1000, api, None, complete / 1000, plotly)


def compare(urls: dict[str, str]) -> dict[str, tuple[Timing, PollCost]]:
    """The host page's cold load on each tree (alternated, after one load each to fill the
    browser's cache as a user's is), and the page left open on each."""
    from playwright.sync_api import sync_playwright

    hash_ = ROUTES["host"]
    runs: dict[str, list[Timing]] = {side: [] for side in urls}
    polls = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1440, "height": 1000})
        context.add_init_script(DRAWN_HOOK)
        for url in urls.values():
            cold_as_seen(context, url, hash_)
        for i in range(COMPARED_RUNS):
            for side in (list(urls) if i % 2 == 0 else list(urls)[::-1]):
                runs[side].append(cold_as_seen(context, urls[side], hash_))
        for side, url in urls.items():
            polls[side] = polling_cost(context, url, hash_)
        browser.close()
    return {side: (median(runs[side]), polls[side]) for side in urls}


def print_compared(ref: str, found: dict[str, tuple[Timing, PollCost]]) -> None:
    (was, was_poll), (now, now_poll) = found["before"], found["after"]
    per = 60 / 15  # refreshes a minute at the page's usual 15 s

    def minute(cost: PollCost, value: float) -> float:
        return cost.per_refresh(value) * per

    print(f"before -> after: {ref}'s tree (git archive {ref}) -> this tree, each seeded alike "
          f"({HOSTS} hosts) and served by its own process; cold loads alternated, median of "
          f"{COMPARED_RUNS}, timed by the page from its navigation on; machine load "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"  {LABELS['host']}, cold, first view drawn: {was.total_s * 1000:.0f} ms -> "
          f"{now.total_s * 1000:.0f} ms (budget {COLD_BUDGET_S['host'] * 1000:.0f} ms)")
    if was.plotly_s is not None and now.plotly_s is not None:
        print(f"  of which: plotly.js in hand (from the cache) at {was.plotly_s * 1000:.0f} -> "
              f"{now.plotly_s * 1000:.0f} ms, the slowest API answer took {was.api_s * 1000:.0f} "
              f"-> {now.api_s * 1000:.0f} ms; the rest is plotly.js's running and the drawing")
    if was.complete_s is not None and now.complete_s is not None:
        print(f"  {LABELS['host']}, cold, every panel drawn: {was.complete_s * 1000:.0f} ms -> "
              f"{now.complete_s * 1000:.0f} ms")
    print(f"  {LABELS['host']}, left open, nothing new: "
          f"{minute(was_poll, was_poll.api_requests):.0f} -> "
          f"{minute(now_poll, now_poll.api_requests):.0f} API requests a minute "
          f"({minute(was_poll, was_poll.not_modified):.0f} -> "
          f"{minute(now_poll, now_poll.not_modified):.0f} of them 304), "
          f"{minute(was_poll, was_poll.bytes) / 1024:.1f} -> "
          f"{minute(now_poll, now_poll.bytes) / 1024:.1f} KiB a minute "
          f"(budget {POLL_BUDGET[0]} requests, {POLL_BUDGET[1]:g} KiB)")


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__, __file__)
    p.add_argument("--before", default="main", metavar="REF",
                   help="the git ref to compare with (default: main; 'none': no comparison)")
    args = p.parse_args(argv)
    if not CHROMIUM.is_file():
        print(f"skipped: no Chromium at {CHROMIUM} (apt-get install chromium)")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(data_dir=Path(tmp))
        print(f"seeding {HOSTS} hosts (one probe pass each) ...", flush=True)
        print(f"  seeded in {seed(settings, HOSTS):.1f} s", flush=True)
        with serving(settings) as url:
            load = os.getloadavg()
            figures = measure(url)
    print(f"machine load (1-min average, {os.cpu_count()} CPUs): {load[0]:.2f} before, "
          f"{os.getloadavg()[0]:.2f} after")
    report(figures)
    if args.before != "none":
        print(f"seeding {HOSTS} hosts for each of {args.before}'s tree and this one ...",
              flush=True)
        with before_and_after(args.before, HOSTS) as urls:
            if urls is not None:
                print_compared(args.before, compare(urls))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
