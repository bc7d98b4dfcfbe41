"""The alerts page lists what the alerts API says and links to the pair; the placement page
highlights the set the scheduler API chose."""

from __future__ import annotations

import re
import time

import pytest

from tests.browser.conftest import FAULTY, Fleet, open_view, screenshot, wait_hash
from tests.browser.plotly import trace
from tests.conftest import SETTLE_S

pytestmark = pytest.mark.browser


def unfold(button) -> None:  # type: ignore[no-untyped-def]
    """Unfold a group of the alerts table, whatever state an earlier test left it in. The
    shared page keeps the alerts view mounted while only the hash changes, and the view keeps
    the groups a user unfolded (tests/browser/test_alerts_grouped.py unfolds this pair's): a
    plain click on a group left open folds it, and the row waited for stays hidden."""
    deadline = time.monotonic() + SETTLE_S
    while button.get_attribute("aria-expanded") != "true":
        assert time.monotonic() < deadline, "the group never unfolded"
        button.click()


def test_alerts_page_lists_the_active_alerts_and_links_to_the_pair(page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    with page.expect_response(lambda r: r.url.endswith("/api/v1/alerts")) as answer:
        open_view(page, "/#/alerts", "alerts")
    alerts = answer.value.json()["alerts"]
    assert alerts
    rows = page.locator('table[aria-label="Alerts"] tbody tr.member')
    assert rows.count() == len(alerts)
    degraded = [a for a in alerts if a["alertname"] == "P2PBandwidthDegraded"
                and a["host"] == FAULTY and a["labels"].get("gpu") == "1"
                and a["labels"].get("peer_gpu") == "2"]
    assert degraded, "the half-speed GPU1 -> GPU2 path raised no alert"
    assert any(a["alertname"] == "NVLinkDown" and a["labels"].get("gpu") == "3" for a in alerts)
    row = page.locator(f'tbody tr[data-key="{degraded[0]["id"]}"]')
    group = row.locator("xpath=ancestor::tbody")
    unfold(group.locator("button.unfold"))  # the pair's alerts unfold under its line
    row.wait_for(state="visible")  # the unfold draws on a later frame: waited, not sampled
    assert degraded[0]["annotations"]["summary"] in row.inner_text()
    assert degraded[0]["state"] in row.locator(".badge").inner_text()
    screenshot(page, "alerts")
    assert "test" not in degraded[0]["labels"]  # one alert for the pair, its tests listed
    row.get_by_role("link", name="GPU1 → GPU2").click()
    page.wait_for_selector("#series-chart[data-ready]")
    wait_hash(page, "pair=1-2")
    page.wait_for_selector("#pair-panel.target")  # scrolled to and outlined
    box = page.locator("#pair-panel").bounding_box()
    assert box and box["y"] < page.viewport_size["height"] and box["y"] + box["height"] > 0
    shapes = page.evaluate("document.getElementById('series-chart').layout.shapes")
    assert len(shapes) >= 2  # the low period and the alert's period are shaded
    annotations = page.evaluate(
        "document.getElementById('series-chart').layout.annotations.map(a => a.text)")
    assert any(a.startswith("P2PBandwidthDegraded") for a in annotations)


def test_alerts_filter_by_host_and_state(page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    with page.expect_response(lambda r: "/api/v1/alerts?" in r.url
                              and "state=firing" in r.url) as answer:
        open_view(page, f"/#/alerts?host={FAULTY}&state=firing", "alerts")
    firing = answer.value.json()["alerts"]  # what the page drew (alerts resolve meanwhile)
    assert firing and {a["host"] for a in firing} == {FAULTY}
    rows = page.locator('table[aria-label="Alerts"] tbody tr.member')
    assert rows.count() == len(firing)
    assert page.locator('button[data-state="firing"]').get_attribute("aria-pressed") == "true"
    page.get_by_role("button", name="Show every host").click()
    wait_hash(page, "state=firing")
    assert "host=" not in page.evaluate("location.hash")


def test_placement_highlights_the_chosen_set(page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    with page.expect_response(lambda r: "/scheduler/placement?" in r.url) as answer:
        # k=3: GPU3 (links down), GPU5 (replays), GPU6 (slow host copies) are left out; the
        # slow GPU1 <-> GPU2 pair is a pair fault: both offered, never together
        open_view(page, f"/#/placement?host={FAULTY}&k=3&pattern=ring", "placement")
    chosen = answer.value.json()
    assert not {3, 5, 6} & set(chosen["gpus"])  # GPU3 lost links: never chosen
    assert not {1, 2} <= set(chosen["gpus"])
    nodes = trace(page, "placement-chart", "nodes")
    outline = dict(zip(nodes["customdata"], nodes["marker"]["line"]["width"], strict=True))
    picked = {f"gpu{g}" for g in chosen["gpus"]}
    assert {n for n, w in outline.items() if w > 1} == picked
    labels = nodes["text"]
    for order, gpu in enumerate(chosen["gpus"], start=1):
        assert f"GPU{gpu} #{order}" in labels
    assert page.locator(".big").inner_text() == f"{chosen['predicted_bps'] / 1e9:.1f} GB/s"
    excluded = page.locator('table[aria-label="GPUs left out"] tbody tr[data-key="3"]')
    assert "not healthy" in excluded.inner_text()
    screenshot(page, "placement")
    # the form changes the URL, and the URL the answer
    page.select_option("#pl-pattern", "all_to_all")
    page.fill("#pl-k", "2")
    with page.expect_response(lambda r: "pattern=all_to_all" in r.url):
        page.get_by_role("button", name="Place").click()
    wait_hash(page, "pattern=all_to_all")


def test_placement_says_why_it_cannot_place(page, fleet: Fleet, browser_context) -> None:  # type: ignore[no-untyped-def]
    _, watch = browser_context
    with page.expect_response(lambda r: "/scheduler/placement?" in r.url) as answer:
        open_view(page, f"/#/placement?host={FAULTY}&k=8&pattern=ring", "placement")
    assert answer.value.status == 409
    message = answer.value.json()["detail"]["message"]
    assert "GPU3" not in message.split("(")[-1]  # GPU3 is not among the healthy ones
    assert page.locator(".error-box").inner_text() == message
    # Chromium logs every 4xx fetch as a console error; this 409 is the answer we asked for
    # (filtered once the page has shown it: the log can come after the response event).
    deadline = time.monotonic() + 10
    while not any("status of 409" in p for p in watch.problems) and time.monotonic() < deadline:
        page.wait_for_timeout(50)
    watch.problems[:] = [p for p in watch.problems if "status of 409" not in p]


def test_a_link_alert_opens_its_gpu(page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    open_view(page, f"/#/alerts?host={FAULTY}", "alerts")
    page.get_by_role("link", name=re.compile(r"^GPU3: links 16")).first.click()  # GPU3's line
    page.wait_for_selector('main[data-ready="host"]:not(:has([data-pending]))')
    wait_hash(page, "gpu=3")
    selected = page.locator('table[aria-label="GPU inventory"] tbody tr.selected')
    assert selected.count() == 1 and selected.get_attribute("data-key") == "3"
    # a GPU's own link (?gpu=3, no link) outlines its inventory row
    open_view(page, f"/#/host/{FAULTY}?gpu=5", "host")
    page.wait_for_selector('table[aria-label="GPU inventory"] tbody tr.target[data-key="5"]')
