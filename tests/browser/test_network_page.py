"""The network page (#/network, docs/network.md) on the browser fleet's simulated network
(demo_fleet.py `NET_HOSTS`): the bad-cable host named first as a host fault with its pairs'
figures, the slow path and its suspects, a slow pair's cell never drawn healthy, an untested
pair never coloured; the URL's `test=` and `host=` checked; the fleet and host pages link
here; a failing API still titles the page. Widths and axe: test_layout_widths.py and
test_accessibility.py list this view with the others."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.browser.conftest import Fleet, open_view, wait_until
from tests.browser.demo_fleet import BAD_CABLE, LOST, MAINTAINED, NET_HOSTS, SKEWED, SLOW, STALE
from tests.conftest import eventually

pytestmark = pytest.mark.browser

HOSTS = "els => els.map(e => e.dataset.host)"
CELL = 'td.net-cell[data-host="{}"][data-peer="{}"]'
# The computed background of a cell as [r, g, b, alpha].
# null where the cell has no colour to read: one the page's refresh has just replaced is
# detached, and a detached element's computed style is empty (`eventually` reads again)
RGB = """el => { const m = getComputedStyle(el).backgroundColor.match(/[\\d.]+/g);
  if (!m) return null; const n = m.map(Number); return n.length === 3 ? [...n, 1] : n; }"""


def test_the_bad_cable_is_named_first_as_a_host_fault(page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    open_view(page, "/#/network", "network")
    cards = page.locator("#network-faults li.net-fault")
    first = cards.first
    kind, subject = first.get_attribute("data-kind"), first.get_attribute("data-subject")
    assert (kind, subject) == ("host", BAD_CABLE)
    text = first.inner_text()
    assert "Host fault" in text and "NetworkHostPathSlow" in text, text
    assert "cable" in text and "3 slow pairs" in text, text
    rows = first.locator("tbody tr")
    assert rows.count() == 3
    for row in rows.all_inner_texts():  # each slow pair: measured against 46.0 GB/s expected
        assert BAD_CABLE in row and "46.0 GB/s" in row and "pair-" in row, row
    kinds = cards.evaluate_all("els => els.map(e => [e.dataset.kind, e.dataset.subject])")
    assert kinds == [["host", BAD_CABLE], ["path", f"{min(LOST, SLOW)}~{max(LOST, SLOW)}"]]
    suspects = page.locator("#network-suspects li").evaluate_all(HOSTS)
    assert sorted(suspects) == sorted([LOST, SLOW])
    assert page.evaluate("document.title") == "Network · 2 faults · peerwatch"


def test_a_slow_pair_is_never_drawn_healthy_nor_an_untested_one_grey(  # type: ignore[no-untyped-def]
        page, fleet: Fleet) -> None:
    open_view(page, "/#/network", "network")
    slow = page.locator(CELL.format(BAD_CABLE, "pcie4-01"))
    healthy = page.locator(CELL.format("hgx8-01", "pcie4-01"))
    assert slow.get_attribute("data-verdict") == "degraded"
    assert slow.inner_text().startswith("▲")
    assert healthy.get_attribute("data-verdict") == "healthy"
    r, g, b, _ = _colour(slow)
    assert r > b and r > g, (r, g, b)  # vermillion/orange: the slow end of the scale
    r, g, b, _ = _colour(healthy)
    assert b > r and b > g, (r, g, b)  # blue: as expected, not a warning colour, not green
    title = slow.get_attribute("title")
    for words in ("degraded", "measured 16.", "expected 46.0 GB/s", "baseline", "measured at",
                  "pair job pair-", f"cause: host {BAD_CABLE}"):
        assert words in title, (words, title)
    never = page.locator(CELL.format(MAINTAINED, SKEWED))
    assert never.get_attribute("data-verdict") == "untested"
    assert _colour(never)[3] == 0  # no fill at all: grey dashes, never a colour
    assert "never tested" in never.get_attribute("title")
    # hosts grouped by leaf: each leaf's hosts in a row, in the map's groups
    leaves = page.locator("table.net-matrix thead th.leaf").all_inner_texts()
    assert leaves == sorted(NET_HOSTS)
    hosts = page.locator("table.net-matrix th.col-host").evaluate_all(HOSTS)
    assert hosts == [h for leaf in sorted(NET_HOSTS) for h in sorted(NET_HOSTS[leaf])]


def test_the_url_is_checked_and_a_host_highlighted(page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    open_view(page, f"/#/network?host={BAD_CABLE}&test=nope", "network")
    notices = page.locator("#network-notices .notice").all_inner_texts()
    said = 'There is no host-pair test "nope"; showing net_write'
    assert any(said in n for n in notices), notices
    assert page.locator("table.net-matrix tbody tr.target").get_attribute("data-host") == BAD_CABLE
    n = sum(len(v) for v in NET_HOSTS.values())
    assert page.locator("td.net-cell.hl").count() == 2 * n - 1  # its row and its column
    assert page.locator(f'li.net-fault.target[data-subject="{BAD_CABLE}"]').count() == 1
    open_view(page, "/#/network?host=nosuch-host", "network")
    notices = page.locator("#network-notices .notice").all_inner_texts()
    assert any("nosuch-host is not on the network map" in n for n in notices), notices
    assert page.locator("td.net-cell.hl").count() == 0


def test_the_fleet_and_a_host_page_link_here(page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    open_view(page, "/#/fleet", "fleet")
    assert page.locator('nav.top a[data-view="network"]').get_attribute("href") == "#/network"
    summary = page.locator("#network-summary")
    summary.wait_for()
    assert "2 faults" in summary.inner_text() and BAD_CABLE in summary.inner_text()
    assert summary.locator("a").first.get_attribute("href") == "#/network"
    open_view(page, f"/#/host/{BAD_CABLE}", "host")
    line = page.locator("#network-line")
    line.wait_for()
    assert "degraded" in line.inner_text() and "host fault" in line.inner_text(), line.inner_text()
    link = line.locator("a")
    assert link.get_attribute("href") == f"#/network?host={BAD_CABLE}"
    link.click()
    wait_until(page, "() => document.querySelector('main').dataset.ready === 'network'"
               " && !!document.querySelector('table.net-matrix tbody tr.target')")
    # a partner of the bad cable is slow with it alone: that host's fault, named, not its own
    pairs = httpx.get(f"{fleet.url}/api/v1/network/pairs", timeout=30).json()["pairs"]
    slow_ends = {e for p in pairs if p["cause"] and not p["cause"].startswith("host:")
                 for e in (p["host"], p["peer_host"])}
    partner = next(e for p in pairs if BAD_CABLE in (p["host"], p["peer_host"])
                   for e in (p["host"], p["peer_host"]) if e != BAD_CABLE and e not in slow_ends)
    open_view(page, f"/#/host/{partner}", "host")
    page.locator("#network-line").wait_for()
    text = page.locator("#network-line").inner_text()
    assert f"slow only with {BAD_CABLE}" in text, text
    assert page.locator("#network-line .badge.v-healthy").count() == 1
    open_view(page, "/#/host/hgx8-01", "host")  # healthy with every partner
    page.locator("#network-line").wait_for()
    assert page.locator("#network-line .badge.v-healthy").count() == 1
    open_view(page, f"/#/host/{STALE}", "host")  # stopped reporting: unknown is never green
    page.locator("#network-line").wait_for()
    text = page.locator("#network-line").inner_text()
    assert "last known healthy" in text, text
    assert page.locator("#network-line .badge.v-unknown").count() == 1
    assert page.locator("#network-line .v-healthy").count() == 0


def test_a_failing_api_still_titles_the_page(page, fleet: Fleet, browser_context) -> None:  # type: ignore[no-untyped-def]
    _, watch = browser_context
    open_view(page, "/#/fleet", "fleet")
    page.route("**/api/v1/network/pairs*", lambda route: route.fulfill(
        status=500, body='{"detail": "boom"}', content_type="application/json"))
    try:
        page.evaluate("h => { location.hash = h; }", "#/network")
        page.locator("#view-error").wait_for(state="visible")
        assert "boom" in page.locator("#view-error").inner_text()
        wait_until(page, "t => document.title === t", "Network · error · peerwatch")
    finally:
        page.unroute("**/api/v1/network/pairs*")
    open_view(page, "/#/fleet", "fleet")
    watch.problems[:] = [p for p in watch.problems if "status of 500" not in p]


def _colour(cell: Any) -> list[float]:
    """The cell's background as [r, g, b, a], read again while a refresh has replaced it."""
    found = eventually(lambda: cell.evaluate(RGB))
    assert found, "the cell never had a background colour"
    return list(found)
