"""A stale host is grey with "last known at …" on every object, never green; the fleet's rows
are sorted by severity, coloured by the worst firing alert, and their reason is never cut."""

from __future__ import annotations

import time
from datetime import datetime

import pytest

from tests.browser.conftest import FAULTY, STALE, Fleet, open_view, screenshot
from tests.browser.plotly import trace

pytestmark = pytest.mark.browser

GREY, GREEN = "#999999", "#009E73"
RANK = {"healthy": 0, "unknown": 1, "degraded": 2, "down": 3}


def test_a_stale_host_page_is_grey_with_last_known_everywhere(page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    detail = fleet.api(f"/hosts/{STALE}")
    assert detail["stale"]
    health = fleet.api(f"/hosts/{STALE}/health")
    assert {g["verdict"] for g in health["gpus"]} == {"healthy"}  # the API's last judgement
    open_view(page, f"/#/host/{STALE}", "host")
    assert "stale" in page.locator(".page-host").get_attribute("class")
    assert "last known at" in page.locator(".host-head .tag.stale").inner_text()
    inventory = page.locator('table[aria-label="GPU inventory"] tbody tr')
    assert inventory.count() == len(detail["gpus"])
    for i in range(inventory.count()):
        badge = inventory.nth(i).locator(".badge")
        assert "healthy" not in badge.inner_text() and "v-unknown" in badge.get_attribute("class")
        assert "last known at" in badge.get_attribute("title")
    nodes = trace(page, "topology-chart", "nodes")
    assert set(nodes["marker"]["color"]) == {GREY}
    assert all("last known at" in h for h in nodes["hovertext"])
    edges = [t for t in page.evaluate("""() => document.getElementById('topology-chart').data
      .filter(t => t.name.startsWith('edge ')).map(t => t.line.color)""")]
    assert edges and GREEN not in edges
    assert all("last known at" in h for h in trace(page, "topology-chart", "links")["hovertext"])
    heat = trace(page, "matrix-chart", "ce_write")
    cells = [h for row in heat["hovertext"] for h in row if "→" in h]
    assert cells and all("last known at" in h for h in cells)
    grey = page.evaluate("getComputedStyle(document.getElementById('matrix-chart')).filter")
    assert "grayscale" in grey
    screenshot(page, "stale-host")


def critical_firing(fleet: Fleet, timeout_s: float = 120) -> set[str]:
    """Hosts with a critical alert firing, once the faulty board's NVLinkDown fires (it is
    pending for its rule's 60 s after the demo first evaluates it)."""
    deadline = time.monotonic() + timeout_s
    while True:
        firing = fleet.api("/alerts", state="firing")["alerts"]
        critical = {a["host"] for a in firing if a["severity"] == "critical"}
        if FAULTY in critical or time.monotonic() > deadline:
            return critical
        time.sleep(1)


def test_fleet_rows_worst_first_coloured_by_alerts_reason_whole(page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    critical = critical_firing(fleet)
    assert FAULTY in critical  # two NVLinks of GPU3 down: NVLinkDown is critical
    open_view(page, "/#/alerts", "alerts")
    with page.expect_response(lambda r: r.url.endswith("/api/v1/hosts")) as answer:
        open_view(page, "/#/fleet", "fleet")
    hosts = {h["host"]: h for h in answer.value.json()["hosts"]}
    rows = page.locator('table[aria-label="Hosts"] tbody tr')
    shown = rows.evaluate_all("""rs => rs.map(r => ({key: r.dataset.key,
      cls: r.querySelector('.badge').className,
      cut: r.querySelector('td.reason').scrollWidth > r.querySelector('td.reason').clientWidth + 1,
      text: r.querySelector('td.reason').innerText}))""")
    verdict = {r["key"]: next(v for v in RANK if f"v-{v}" in r["cls"]) for r in shown}
    for host in critical - {h for h in hosts if hosts[h]["stale"]}:
        assert verdict[host] == "down", (host, verdict[host])  # red, whatever the word says
    faulty_badge = page.locator(f'tbody tr[data-key="{FAULTY}"] .badge').inner_text()
    assert faulty_badge.endswith(f"{hosts[FAULTY]['verdict']} · critical")
    # the host page's header follows the same rule
    open_view(page, f"/#/host/{FAULTY}", "host")
    head = page.locator(".host-head .badge")
    assert "v-down" in head.get_attribute("class") and "critical" in head.inner_text()
    open_view(page, "/#/fleet", "fleet")
    fresh = [RANK[verdict[r["key"]]] for r in shown if not hosts[r["key"]]["stale"]]
    assert fresh == sorted(fresh, reverse=True)  # worst first
    assert not [r for r in shown if r["cut"]]  # the reason wraps, never clipped
    faulty = next(r for r in shown if r["key"] == FAULTY)
    assert faulty["text"].startswith("GPU")  # the specific fault first, the tally after
    since = datetime.fromisoformat(hosts[FAULTY]["since"].replace("Z", "+00:00"))
    assert f"since {since:%Y-%m-%d %H:%M:%S}Z" in faulty["text"]  # the stored verdict's since
    chip = page.locator('.chips .chip[data-verdict="down"]').inner_text()
    assert int(chip.split()[1]) >= len(critical - {h for h in hosts if hosts[h]["stale"]})
    stale = page.locator(f'tbody tr[data-key="{STALE}"]')
    assert "stale-row" in stale.get_attribute("class")
    assert "last known at" in stale.locator("td.reason").inner_text()
    assert "v-healthy" not in stale.locator(".badge").get_attribute("class")
