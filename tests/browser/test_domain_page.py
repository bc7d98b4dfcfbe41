"""The NVLink domain page (#/domain/<id>): the demo's NVL72 rack as trays x GPUs, each cell
what the API said, the tray in another clique marked, each tray linking to its host page;
and the fleet page's link to it."""

from __future__ import annotations

import time

import pytest

from peerwatch.probes.sim.presets import rack_cluster_uuid
from tests.browser.conftest import Fleet, open_view, screenshot, wait_hash

pytestmark = pytest.mark.browser

DOMAIN = rack_cluster_uuid("nvl72-a")  # the demo's rack (app/demo/fleet.py)
CELLS = "els => els.map(e => [Number(e.dataset.gpu), e.dataset.verdict, e.dataset.state])"


def wait_rack(fleet: Fleet, timeout_s: float = 60) -> None:
    """Until all 18 trays of the demo's rack have reported (they start with the demo)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = [d for d in fleet.api("/domains")["domains"] if d["id"] == DOMAIN]
        if found and found[0]["tray_count"] == 18:
            return
        time.sleep(0.5)
    raise AssertionError("the demo's NVL72 rack did not report all 18 trays")


def open_domain(page, path: str) -> dict:  # type: ignore[no-untyped-def]
    """Open the domain page afresh; the domain as the API answered the page."""
    open_view(page, "/#/alerts", "alerts")
    with page.expect_response(lambda r: f"/api/v1/domains/{DOMAIN}" in r.url) as answer:
        open_view(page, path, "domain")
    body: dict = answer.value.json()
    return body


def test_the_fleet_page_links_to_the_rack(page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    wait_rack(fleet)
    open_view(page, "/#/alerts", "alerts")
    open_view(page, "/#/fleet", "fleet")
    item = page.locator(f'.domain-list li[data-domain="{DOMAIN}"]')
    assert "18 trays, 72 GPUs" in item.inner_text()
    item.locator("a.domain-link").click()
    wait_hash(page, f"#/domain/{DOMAIN}")
    page.wait_for_selector('main[data-ready="domain"]')


def test_trays_by_gpus_are_what_the_api_says(page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    wait_rack(fleet)
    api = open_domain(page, f"/#/domain/{DOMAIN}")
    rows = page.locator(".tray-grid tbody tr")
    assert rows.count() == len(api["trays"]) == 18
    for tray in api["trays"]:
        row = page.locator(f'.tray-grid tr[data-host="{tray["host"]}"]')
        assert row.locator(".gpu-cell").evaluate_all(CELLS) == [
            [g["gpu"], g["verdict"], g["state"]] for g in tray["gpus"]]
        link = row.locator("a.host")
        assert link.get_attribute("href") == f"#/host/{tray['host']}"
        assert tray["verdict"] in row.locator(".badge").inner_text()
    moved = page.locator('.tray-grid tr[data-host="nvl72-a-tray12"] .clique')
    assert moved.inner_text() == "2" and "apart" in (moved.get_attribute("class") or "")
    assert page.locator(".domain-reason").inner_text() == api["reason"]
    assert "split into 2 cliques" in api["reason"]
    cliques = page.locator(".clique-list li")
    assert cliques.count() == len(api["cliques"])
    assert page.locator(".page-head .badge").first.inner_text().strip().endswith(api["verdict"])
    screenshot(page, "domain")


def test_a_cell_says_its_fabric_state_and_reason(page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    wait_rack(fleet)
    api = open_domain(page, f"/#/domain/{DOMAIN}")
    gpu = api["trays"][0]["gpus"][0]
    cell = page.locator('.tray-grid tr[data-host="nvl72-a-tray01"] .gpu-cell[data-gpu="0"]')
    label = cell.get_attribute("aria-label") or ""
    assert f"fabric {gpu['state']}" in label and f"clique {gpu['clique_id']}" in label
    assert gpu["reason"] in label


def test_a_tray_opens_its_host_page(page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    wait_rack(fleet)
    open_domain(page, f"/#/domain/{DOMAIN}")
    page.locator('.tray-grid tr[data-host="nvl72-a-tray03"] a.host').click()
    wait_hash(page, "#/host/nvl72-a-tray03")
    page.wait_for_selector('main[data-ready="host"]:not(:has([data-pending]))')
    # and the tray's page links back up to its domain (issue 40)
    back = page.locator("a.domain-link")
    assert back.get_attribute("href") == f"#/domain/{DOMAIN}"
    back.click()
    wait_hash(page, f"#/domain/{DOMAIN}")
    page.wait_for_selector('main[data-ready="domain"]')


def test_an_unknown_domain_says_so(page, browser_context) -> None:  # type: ignore[no-untyped-def]
    open_view(page, "/#/alerts", "alerts")
    page.evaluate("h => { location.hash = h; }", "#/domain/" + "f" * 32)
    page.wait_for_selector("#view-error")
    assert f"NVLink domain '{'f' * 32}' not found" in page.locator("#view-error").inner_text()
    _, watch = browser_context
    # Chromium logs the API's 404 as a console error; it is the answer we asked for.
    watch.problems[:] = [p for p in watch.problems if "status of 404" not in p]
