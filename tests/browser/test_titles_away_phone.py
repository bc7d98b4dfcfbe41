"""A title per view and focus on its heading; the server away or one endpoint
failing keeps "last good data HH:MM (N min ago)" beside the error, each panel failing on its
own; on a phone (390x844) the fleet table shows host, verdict and reason, and the host's
topology reads as a list."""

from __future__ import annotations

import re

import pytest

from tests.browser.conftest import FAULTY, Fleet, open_view, screenshot, wait_until

pytestmark = pytest.mark.browser

UPDATED = "() => document.getElementById('refresh-status').textContent.startsWith('updated')"


def test_each_view_has_its_title_and_focus_moves_to_its_heading(page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    verdict = fleet.api(f"/hosts/{FAULTY}/health")["verdict"]
    views = [("/#/fleet", "fleet", r"^Fleet · \d+ down, \d+ degraded, \d+ unknown · peerwatch$"),
             (f"/#/host/{FAULTY}", "host", rf"^{re.escape(FAULTY)} · {verdict} · peerwatch$"),
             ("/#/alerts", "alerts", r"^Alerts · \d+ firing · peerwatch$"),
             ("/#/placement", "placement", r"^Placement( · .+)? · peerwatch$")]
    titles = set()
    # The page's first view leaves the focus where a new page has it (the first Tab reaches
    # the skip link): start from a view none of the checked ones is, whatever ran before.
    open_view(page, "/#/alerts", "alerts")
    for path, view, pattern in views:
        open_view(page, path, view)
        title = page.title()
        assert re.match(pattern, title), (view, title)
        titles.add(title)
        assert page.evaluate("document.activeElement.tagName") == "H1", view  # moved there
    assert len(titles) == len(views)


def _network_noise(watch) -> None:  # type: ignore[no-untyped-def]
    """The browser logs each refused request as a console error: here they are the test."""
    watch.problems[:] = [p for p in watch.problems if "Failed to load resource" not in p
                         and "net::ERR_FAILED" not in p]


def test_server_away_keeps_the_time_of_the_last_good_data(  # type: ignore[no-untyped-def]
        fresh_page, browser_context, fleet: Fleet) -> None:
    page = fresh_page
    open_view(page, f"/?refresh=1#/host/{FAULTY}", "host")
    page.route("**/api/v1/**", lambda route: route.abort())
    wait_until(page, "() => document.getElementById('refresh-status').textContent"
               ".includes('update failed')", timeout_s=30)
    status = page.locator("#refresh-status").inner_text()
    assert re.search(r"last good data \d\d:\d\d \(\d+ (s|min) ago\)", status), status
    box = page.locator("#view-error").inner_text()
    assert "server did not answer" in box and "last good data" in box, box
    assert page.locator("#topology-chart[data-ready]").count() == 1  # what it showed stays
    screenshot(page, "server-away")
    page.unroute("**/api/v1/**")
    wait_until(page, UPDATED, timeout_s=30)
    assert page.locator("#view-error").count() == 0
    _network_noise(browser_context[1])


def test_one_endpoint_failing_fails_only_its_panel(  # type: ignore[no-untyped-def]
        fresh_page, browser_context, fleet: Fleet) -> None:
    page = fresh_page
    open_view(page, f"/?refresh=1#/host/{FAULTY}", "host")
    page.route("**/topology", lambda route: route.fulfill(status=500, body='{"detail": "boom"}',
                                                         content_type="application/json"))
    note = page.locator('.panel-error[data-panel="topology"]')
    note.wait_for(timeout=30_000)
    assert "500" in note.inner_text() and "last good data" in note.inner_text()
    wait_until(page, UPDATED, timeout_s=30)  # the page itself refreshed fine
    assert page.locator("#view-error").count() == 0
    assert page.locator("#matrix-chart[data-ready]").count() == 1
    assert page.locator('.panel-error[data-panel="matrix"]').count() == 0
    page.unroute("**/topology")
    wait_until(page, "() => !document.querySelector('.panel-error')", timeout_s=30)
    _network_noise(browser_context[1])


@pytest.fixture
def phone(browser, fleet: Fleet):  # type: ignore[no-untyped-def]
    context = browser.new_context(base_url=fleet.url, viewport={"width": 390, "height": 844},
                                  is_mobile=True, has_touch=True)
    context.set_default_timeout(20_000)
    page = context.new_page()
    yield page
    context.close()


def test_phone_fleet_table_shows_host_verdict_and_reason(phone, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    open_view(phone, "/?refresh=86400#/fleet", "fleet")
    rows = phone.locator('table[aria-label="Hosts"] tbody tr')
    assert rows.count() >= 5
    for i in range(min(rows.count(), 8)):
        row = rows.nth(i)
        row.scroll_into_view_if_needed()
        for part in ("a.host", ".badge", "td.reason"):
            box = row.locator(part).first.bounding_box()
            assert box and box["width"] > 0, (i, part)
            assert box["x"] >= 0 and box["x"] + box["width"] <= 391, (i, part, box)
        assert row.locator("a.host").inner_text().strip() == row.get_attribute("data-key")
    screenshot(phone, "fleet-phone")


def test_phone_host_topology_is_a_readable_list(phone, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    open_view(phone, f"/?refresh=86400#/host/{FAULTY}", "host")
    assert phone.locator("#topology-chart").is_hidden()
    items = phone.locator("#topology-list .topo-gpu")
    assert items.count() == 8
    first = items.first.inner_text()
    assert first.startswith("GPU3") and ("down" in first or "degraded" in first), first
    box = items.first.bounding_box()
    assert box and box["x"] + box["width"] <= 391
    screenshot(phone, "host-phone")
