"""A node peerwatch drain took out shows "taken out by peerwatch HH:MM" on its fleet row and
its host page, the reason in the tag's title; observe mode reads "would be taken out"; a node
it returned shows nothing."""

from __future__ import annotations

import httpx
import pytest

from tests.browser.conftest import FAULTY, Fleet, open_view
from tests.browser.demo_fleet import ADMIN_TOKEN, MAINTAINED

pytestmark = pytest.mark.browser
REASON = "GPU5 down: all 18 NVLinks down"


def _act(fleet: Fleet, host: str, kind: str, mode: str = "act") -> None:
    r = httpx.post(f"{fleet.url}/api/v1/actions", json={
        "host": host, "scheduler": "slurm", "kind": kind, "mode": mode, "reason": REASON,
        "actor": "browser-test"}, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    assert r.status_code == 201, r.text


def test_fleet_row_and_host_page_show_peerwatchs_take_out(page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    _act(fleet, FAULTY, "take_out")
    _act(fleet, MAINTAINED, "take_out", mode="observe")
    try:
        with page.expect_response(lambda r: "/api/v1/drain/marks" in r.url):
            open_view(page, "/#/alerts", "alerts")
            open_view(page, "/#/fleet", "fleet")
        tag = page.locator(f'tbody tr[data-key="{FAULTY}"] .tag.drain')
        tag.wait_for()
        assert tag.inner_text().startswith("taken out by peerwatch ")
        assert REASON in (tag.get_attribute("title") or "")
        watched = page.locator(f'tbody tr[data-key="{MAINTAINED}"] .tag.drain.observe')
        assert "would be taken out" in watched.inner_text()
        open_view(page, f"/#/host/{FAULTY}", "host")
        head = page.locator(".tag.drain")
        head.wait_for()
        assert head.inner_text().startswith("taken out by peerwatch ")
    finally:
        _act(fleet, FAULTY, "return")
        _act(fleet, MAINTAINED, "forget", mode="observe")
    with page.expect_response(lambda r: "/api/v1/drain/marks" in r.url):
        open_view(page, "/#/alerts", "alerts")
        open_view(page, "/#/fleet", "fleet")
    page.locator(f'tbody tr[data-key="{FAULTY}"]').wait_for()
    assert page.locator(".tag.drain").count() == 0
