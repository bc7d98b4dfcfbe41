"""No page wider than the screen (issue 40): at 390 px (a phone) and at 1440 px every view
fits its width (document scrollWidth <= innerWidth); wide tables scroll inside themselves
with their key column pinned, and a host's problems are one line per GPU."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.browser.conftest import Fleet, open_view, screenshot
from tests.browser.test_job_page import wait_job
from tests.browser.test_job_snapshots import wait_for_host

pytestmark = pytest.mark.browser

WIDTHS = (390, 1440)
# The page's width, and each table wider than the box it scrolls in: its label, and whether
# its first column stays pinned while it scrolls.
OVERFLOW = """width => ({scroll: document.documentElement.scrollWidth, inner: window.innerWidth,
  wide: [...document.querySelectorAll('main *')].filter(e => {
    const r = e.getBoundingClientRect();
    return r.right > width + 1
      && ![...e.children].some(c => c.getBoundingClientRect().right > width + 1);
  }).slice(0, 6).map(e => `${e.tagName}.${e.getAttribute('class')}#${e.id}`),
  tables: [...document.querySelectorAll('main table')].filter(t => t.offsetParent).map(t => {
    let box = t.parentElement;
    while (box && !['auto', 'scroll'].includes(getComputedStyle(box).overflowX)) {
      box = box.parentElement;
    }
    const cell = t.querySelector('tbody tr td, thead tr th');
    return {label: t.getAttribute('aria-label') || t.className, width: t.scrollWidth,
            room: box ? box.clientWidth : window.innerWidth,
            pinned: cell ? getComputedStyle(cell).position === 'sticky' : true};
  }).filter(t => t.width > t.room + 1)})"""


@pytest.fixture(params=WIDTHS, ids=lambda w: f"{w}px")
def sized(request, browser, fleet: Fleet) -> Iterator[tuple[object, int]]:  # type: ignore[no-untyped-def]
    width = request.param
    context = browser.new_context(base_url=fleet.url, viewport={"width": width, "height": 900},
                                  is_mobile=width < 500, has_touch=width < 500)
    context.set_default_timeout(20_000)
    page = context.new_page()
    page.goto("/?refresh=86400#/fleet")
    page.wait_for_selector('main[data-ready="fleet"]')
    yield page, width
    context.close()


def views(fleet: Fleet) -> list[tuple[str, str]]:
    domains = fleet.api("/domains")["domains"]
    return [("/#/fleet", "fleet"), ("/#/host/hgx8-01?range=24h", "host"),
            (f"/#/host/{fleet.faulty}?pair=1-2", "host"), ("/#/alerts", "alerts"),
            ("/#/placement", "placement"), ("/#/job/81240", "job"),
            (f"/#/compare?hosts=hgx8-01,{fleet.faulty}&pair=0-1", "compare"),
            ("/#/network?host=mesh4-01", "network")] + \
        [(f"/#/domain/{domains[0]['id']}", "domain")] * bool(domains)


def test_no_view_is_wider_than_the_screen(sized, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    page, width = sized
    wait_for_host(fleet)
    wait_job(fleet, "81240")
    too_wide = {}
    for path, view in views(fleet):
        open_view(page, path, view)
        page.wait_for_timeout(200)  # a chart's resize after the first draw
        seen = page.evaluate(OVERFLOW, width)
        # a page never scrolls sideways; a table may scroll inside itself only on a phone,
        # with its key column pinned (at 1440 px the GPU evidence is all in view)
        wide = [t for t in seen["tables"] if width > 500 or not t["pinned"]]
        # (a phone widens its layout viewport to the content: innerWidth alone would follow)
        if max(seen["scroll"], seen["inner"]) > width or wide:
            too_wide[path] = {**seen, "tables": wide}
        if view in ("host", "job", "fleet", "network"):
            screenshot(page, f"layout-{view}-{width}")
    assert not too_wide, too_wide
