"""A declared maintenance window shows as a small "maintenance until …" tag on the host's
fleet row and on its page; hosts outside a window show none."""

from __future__ import annotations

import pytest

from tests.browser.conftest import FAULTY, Fleet, open_view
from tests.browser.demo_fleet import MAINTAINED

pytestmark = pytest.mark.browser


def test_fleet_row_and_host_page_show_the_window(page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    [window] = fleet.api("/maintenance", host=MAINTAINED)["windows"]
    assert window["active"]
    with page.expect_response(lambda r: "/api/v1/maintenance" in r.url):
        open_view(page, "/#/alerts", "alerts")
        open_view(page, "/#/fleet", "fleet")
    row = page.locator(f'tbody tr[data-key="{MAINTAINED}"]')
    tag = row.locator(".tag.maintenance")
    tag.wait_for()
    assert "maintenance until" in tag.inner_text()
    assert "NVSwitch tray swap" in (tag.get_attribute("title") or "")
    assert page.locator(f'tbody tr[data-key="{FAULTY}"] .tag.maintenance').count() == 0

    open_view(page, f"/#/host/{MAINTAINED}", "host")
    head = page.locator(".tag.maintenance")
    head.wait_for()
    assert "maintenance until" in head.inner_text()
