"""A cold host page (a new tab) draws its first view without waiting on round trips it can
avoid (issue 40: 3.2 s at 200 hosts; bench/dashboard.py times it): its modules come from an
immutable, build-named folder the browser keeps; its first-view API calls leave from boot.js
before the module graph has loaded, each asked once, while plotly.js loads; the charts below
the fold follow, each with a placeholder meanwhile."""

from __future__ import annotations

import re
from collections import Counter
from urllib.parse import urlsplit

import httpx
import pytest

from tests.browser.conftest import FAULTY, Fleet, open_view

pytestmark = pytest.mark.browser

RESOURCES = """() => performance.getEntriesByType('resource').map(e => ({
  path: new URL(e.name).pathname + new URL(e.name).search, start: e.startTime,
  end: e.responseEnd }))"""
FIRST_VIEW = (r"^/api/v1/(hosts/[^/]+(/health|/topology|/matrix\?.*|/series\?.*|/events\?.*)?"
              r"|maintenance\?.*|drain/marks\?.*)$")
DRAWN_AT = "() => performance.getEntriesByName('peerwatch:drawn:host')[0].startTime"
NO_WINDOW = r"/hosts/[^/]+(/health|/topology|/matrix\?.*)?$"  # the calls needing no time window


def hold_plotly_until_the_calls_left(page) -> None:  # type: ignore[no-untyped-def]
    """plotly.js is held back until the four calls that need no time window have left, so
    the order is the page's, never the machine's speed: were they to wait for plotly.js,
    the page would never draw and `open_view` would time out."""
    held: list = []  # type: ignore[type-arg]
    left: set[str] = set()

    def on_request(request) -> None:  # type: ignore[no-untyped-def]
        url = urlsplit(request.url)
        path = url.path + (f"?{url.query}" if url.query else "")
        if re.search(FIRST_VIEW, path) and re.search(NO_WINDOW, path):
            left.add(path)
        while len(left) >= 4 and held:
            held.pop().continue_()

    def hold(route) -> None:  # type: ignore[no-untyped-def]
        if len(left) >= 4:
            route.continue_()
        else:
            held.append(route)

    page.on("request", on_request)
    page.route(re.compile(r"plotly-cartesian"), hold)


def test_a_cold_host_page_asks_each_first_call_once_and_early(fresh_page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    page = fresh_page
    hold_plotly_until_the_calls_left(page)
    open_view(page, f"/?refresh=86400#/host/{FAULTY}?pair=1-2&test=ce_write", "host")
    drawn = page.evaluate(DRAWN_AT)
    found = page.evaluate(RESOURCES)
    # the first view's calls (the alerts are asked again below the fold, with resolved ones)
    first_view = [r for r in found if re.search(FIRST_VIEW, r["path"]) and r["start"] < drawn]
    asked = Counter(r["path"] for r in first_view)
    assert asked and max(asked.values()) == 1, asked  # boot.js's answers taken, not asked again
    for part in ("/health", "/topology", "/matrix?test=ce_write", "/series?src=1&dst=2"):
        assert any(part in p for p in asked), (part, asked)
    [plotly] = [r for r in found if "plotly-cartesian" in r["path"]]
    # the calls that need no time window left before plotly.js had loaded (boot.js's)
    judged = [r for r in first_view if re.search(NO_WINDOW, r["path"])]
    assert len(judged) == 4, first_view
    assert max(r["start"] for r in judged) < plotly["end"], (judged, plotly)

def test_our_files_come_from_an_immutable_build_folder(fleet: Fleet) -> None:
    html = httpx.get(f"{fleet.url}/", timeout=30).text
    [build] = set(re.findall(r'src="/static/(b-[0-9a-f]{16})/app\.js"', html))
    preloads = re.findall(r'<link rel="modulepreload" href="(/static/[^"]+)">', html)
    assert preloads and all(p.startswith(f"/static/{build}/") for p in preloads)
    answer = httpx.get(f"{fleet.url}/static/{build}/views/host.js", timeout=30)
    assert answer.status_code == 200 and "immutable" in answer.headers["cache-control"]
    other = httpx.get(f"{fleet.url}/static/b-0000000000000000/views/host.js", timeout=30)
    assert other.status_code == 200 and other.headers["cache-control"] == "no-cache"


PLACEHOLDER = """() => { const box = document.createElement('div'); box.dataset.pending = 'x';
  const chart = document.createElement('div'); chart.className = 'chart'; box.append(chart);
  document.querySelector('main').append(box);
  const before = getComputedStyle(chart, '::after').content;
  chart.dataset.ready = 'true';
  const after = getComputedStyle(chart, '::after').content;
  box.remove(); return [before, after]; }"""


def test_a_chart_still_loading_below_the_fold_has_a_placeholder(page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    open_view(page, f"/#/host/{FAULTY}", "host")
    before, after = page.evaluate(PLACEHOLDER)
    assert "loading" in before and "loading" not in after
