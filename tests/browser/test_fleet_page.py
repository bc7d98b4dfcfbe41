"""The fleet page: every host from the API, filter and sort in the URL, keyboard to a host."""

from __future__ import annotations

import re

import pytest

from tests.browser.conftest import FAULTY, Fleet, open_view, screenshot, wait_hash

pytestmark = pytest.mark.browser


def open_fleet(page, path: str = "/#/fleet") -> list[dict]:  # type: ignore[no-untyped-def]
    """Open the fleet page afresh; the hosts as the API answered the page."""
    open_view(page, "/#/alerts", "alerts")
    with page.expect_response(lambda r: r.url.endswith("/api/v1/hosts")) as answer:
        open_view(page, path, "fleet")
    hosts: list[dict] = answer.value.json()["hosts"]
    return hosts


def test_every_host_is_listed_with_its_verdict(page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    hosts = {h["host"]: h for h in open_fleet(page)}
    assert {"hgx8-01", "h200x2-01", "mesh4-01", "pcie4-01", FAULTY} <= set(hosts)
    rows = page.locator("table.grid tbody tr")
    assert rows.count() == len(hosts)
    for name, summary in hosts.items():
        row = page.locator(f'tbody tr[data-key="{_css(name)}"]')
        word = row.locator(".badge").first.inner_text()
        if summary["stale"]:  # unknown now; the last count is history, never "4 / 4"
            assert word.strip().endswith("unknown")
            assert f"? {summary['gpus_total']}" in row.inner_text()
            continue
        if summary["clock_note"]:  # its probe clock is off: not trusted yet, never "healthy"
            assert word.strip().endswith("unknown")
            continue
        assert word.strip().endswith(summary["verdict"])
        assert f"{summary['gpus_healthy']} / {summary['gpus_total']}" in row.inner_text()
    assert page.locator(".heat-grid .cell").count() == len(hosts)
    faulty = page.locator(f'tbody tr[data-key="{FAULTY}"]')
    assert hosts[FAULTY]["verdict"] in ("degraded", "down")
    assert "healthy" not in faulty.locator(".badge").inner_text()
    worst = hosts[FAULTY]["worst_pair"]
    assert f"{worst['ratio']:.2f}" in faulty.inner_text()
    # worst first: the faulty host's cell comes before every healthy host's
    cells = page.locator(".heat-grid .cell").evaluate_all("cs => cs.map(c => c.className)")
    assert "v-healthy" not in cells[0]
    screenshot(page, "fleet")


def test_filter_and_sort_live_in_the_url(page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    hosts = open_fleet(page)
    page.fill("input.filter", "mesh4")
    wait_hash(page, "q=mesh4")
    assert page.locator("table.grid tbody tr").count() == 1
    assert page.locator(".heat-grid .cell").count() == 1
    page.fill("input.filter", "")
    page.get_by_role("button", name=re.compile("^Host")).click()
    wait_hash(page, "sort=host")
    names = page.locator("table.grid tbody tr").evaluate_all("rs => rs.map(r => r.dataset.key)")
    assert names == sorted(names)
    page.locator("button[data-verdict=healthy]").click()
    wait_hash(page, "v=healthy")
    healthy = [h for h in hosts if h["verdict"] == "healthy" and not h["clock_note"]]
    assert page.locator("table.grid tbody tr").count() == len(healthy)
    # the URL alone restores the same view
    open_view(page, "/#/fleet?q=mesh4&v=", "fleet")
    assert page.locator("table.grid tbody tr").count() == 1
    assert page.input_value("input.filter") == "mesh4"


def test_keyboard_opens_a_host(page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    open_view(page, "/#/fleet", "fleet")
    page.focus(f'tbody tr[data-key="{FAULTY}"]')
    page.keyboard.press("ArrowDown")
    focused = page.evaluate("document.activeElement.dataset.key")
    assert focused and focused != FAULTY
    page.keyboard.press("ArrowUp")
    page.keyboard.press("Enter")
    page.wait_for_selector('main[data-ready="host"]:not(:has([data-pending]))')
    assert page.locator("h1 .host").inner_text() == FAULTY


def _css(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')
