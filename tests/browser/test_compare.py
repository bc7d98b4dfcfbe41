"""Compare (issue 40, item 6): the fleet page's filter showing 2 to 8 hosts links to one
pair's history on all of them, overlaid; each line is what that host's series says."""

from __future__ import annotations

import pytest

from tests.browser.conftest import FAULTY, Fleet, open_view, wait_until
from tests.browser.test_job_snapshots import wait_for_host

pytestmark = pytest.mark.browser


def test_the_fleet_filter_compares_its_hosts(page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    wait_for_host(fleet)
    open_view(page, "/#/fleet?q=hgx8", "fleet")
    link = page.locator("#compare-link")
    shown = page.locator("table.grid tbody tr[data-key]").evaluate_all(
        "rs => rs.map(r => r.dataset.key)")
    assert 2 <= len(shown) <= 8 and FAULTY in shown
    href = link.get_attribute("href")
    assert href.startswith("#/compare?hosts=") and all(h in href for h in shown)
    link.click()
    wait_until(page, "() => document.querySelector('main').dataset.ready === 'compare'")
    wait_until(page, "() => document.getElementById('compare-chart').dataset.ready === 'true'")
    drawn = page.evaluate("() => document.getElementById('compare-chart').data"
                          ".filter(t => t.name !== 'window').map(t => [t.name, t.x.length])")
    names = [n for n, _ in drawn]
    assert FAULTY in names and "hgx8-01" in names
    series = fleet.api(f"/hosts/{FAULTY}/series", src=0, dst=1, test="ce_write")
    assert dict(drawn)[FAULTY] >= len(series["buckets"]) - 1  # (a bucket may close meanwhile)
    assert page.title().startswith("Compare · ")
    assert page.locator("h1").inner_text() == "Compare GPU0 → GPU1 · ce_write"
