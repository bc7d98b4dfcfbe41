"""The fleet page's "Fleet peers" section draws the stored peer groups of the running demo:
each group's median, low percentile and size as the API gives them, and the seeded slow
H200 host listed far below its peers, linked to its pair."""

from __future__ import annotations

import pytest

from tests.browser.conftest import Fleet, open_view, screenshot
from tests.browser.demo_fleet import SLOW

pytestmark = pytest.mark.browser


def _gbps(bps: float) -> str:
    return f"{bps / 1e9:.1f} GB/s"


def test_peer_groups_and_the_slow_host_are_shown(page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    open_view(page, "/#/alerts", "alerts")
    with page.expect_response(lambda r: r.url.endswith("/api/v1/fleet/peers")) as answer:
        open_view(page, "/#/fleet", "fleet")
    data = answer.value.json()
    section = page.get_by_role("region", name="Fleet peers")
    section.wait_for()
    judging = section.get_by_role("table", name="Peer groups", exact=True).locator("tbody tr")
    # groups with something to say in view; those with nobody below folded (issue 40)
    assert judging.count() == sum(g["eligible"] and bool(g["below"]) for g in data["groups"]) > 0
    quiet = section.locator("details.quiet-groups")
    assert quiet.get_attribute("open") is None
    assert quiet.locator("tbody tr").count() == sum(g["eligible"] and not g["below"]
                                                   for g in data["groups"]) > 0
    small = section.locator("details.small-groups")
    assert small.locator("tbody tr").count() == sum(not g["eligible"] for g in data["groups"])
    small.locator("summary").click()  # collapsed until asked for
    assert "too few to judge anybody against" in small.locator("tbody").inner_text()
    h200 = [g for g in data["groups"] if g["gpu_model"] == "NVIDIA H200"
            and g["topology"] == "NVSwitch NV18" and g["test"] == "ce_write"]
    assert len(h200) == 1 and h200[0]["eligible"] and h200[0]["hosts"] >= 3
    group = h200[0]
    key = f'{group["gpu_model"]}|{group["topology"]}|{group["driver"]}|ce_write'
    row = section.locator(f'tr[data-group="{key}"]')
    if row.is_hidden():
        quiet.locator("summary").click()
    text = row.inner_text()
    assert _gbps(group["median"]) in text and _gbps(group["low"]) in text
    assert f'\t{group["hosts"]}\t' in text
    flagged = [(b["host"], b["src"], b["dst"]) for g in data["groups"] for b in g["below"]]
    assert flagged and {h for h, _, _ in flagged} == {SLOW}
    tags = section.locator(".tag.peer-below")
    assert tags.count() == len(flagged)
    assert all(SLOW in t for t in tags.all_inner_texts())
    # GPU1's own copies, grouped by its PCIe link: shown as the GPU, linking to it
    assert (SLOW, 1, 1) in flagged
    gpu_tag = section.locator('.tag.peer-below[href*="gpu=1"]')
    assert gpu_tag.count() == 1 and gpu_tag.inner_text().startswith(f"{SLOW} GPU1 0.")
    assert "PCIe gen5 x16" in gpu_tag.locator("xpath=ancestor::tr").inner_text()
    screenshot(page, "fleet-peers")
    tags.first.click()
    page.wait_for_selector('main[data-ready="host"]:not(:has([data-pending]))')
    assert page.locator("h1 .host").inner_text() == SLOW
