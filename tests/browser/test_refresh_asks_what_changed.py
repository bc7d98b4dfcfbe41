"""An open host page asks again only for what changed: each refresh reads
the host's record, whose `changed_at` says when its judged answers last changed; while it
holds, health, topology and matrix are not asked again (unchanged answers would be 304s
anyway, but the server would still build them)."""

from __future__ import annotations

import time

import pytest

from tests.browser.conftest import Fleet, open_view, wait_until
from tests.browser.demo_fleet import MAINTAINED

pytestmark = pytest.mark.browser

UPDATES = "() => Number(document.querySelector('main').dataset.updates || 0)"
JUDGED = ("/health", "/topology", "/matrix")


def test_an_open_host_page_asks_again_only_for_what_changed(fresh_page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    page = fresh_page
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.url) if "/api/v1/hosts/" in r.url else None)
    open_view(page, f"/?refresh=1#/host/{MAINTAINED}", "host")
    for _ in range(3):  # a report may change the host meanwhile: then look again
        before = fleet.api(f"/hosts/{MAINTAINED}")["changed_at"]
        wait_until(page, "() => !document.querySelector('main [data-pending]')")
        asked.clear()
        start = page.evaluate(UPDATES)  # one refresh may be under way: count one more
        wait_until(page, f"() => ({UPDATES})() >= {start + 4}")  # three whole refreshes
        if fleet.api(f"/hosts/{MAINTAINED}")["changed_at"] == before:
            break
    else:
        pytest.fail(f"{MAINTAINED}'s changed_at moved in each of three tries")
    assert before is not None
    records = [u for u in asked if u.split("?")[0].endswith(f"/hosts/{MAINTAINED}")]
    assert len(records) >= 3, asked  # each refresh reads the record ...
    judged = [u for u in asked if any(u.split("?")[0].endswith(p) for p in JUDGED)]
    # ... and nothing it already has: at most the first of the three refreshes asks (the
    # host may have changed between the page's last load and `before`), never all three
    assert len(judged) <= len(JUDGED), judged
    assert page.locator("#topology-chart[data-ready]").count() == 1  # still drawn


def test_slow_panels_are_not_asked_every_refresh(fresh_page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    """Xid/SXid events are asked with the slow reads (every 4th refresh), the link counters
    only when a new report came or the window moved: over 8 refreshes, not 8 times each."""
    page = fresh_page
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.url) if "/api/v1/hosts/" in r.url else None)
    open_view(page, f"/?refresh=1#/host/{MAINTAINED}", "host")
    wait_until(page, "() => !document.querySelector('main [data-pending]')")
    asked.clear()
    reports = {fleet.api(f"/hosts/{MAINTAINED}")["last_report_at"]}
    start = page.evaluate(UPDATES)
    wait_until(page, f"() => ({UPDATES})() >= {start + 9}")  # eight whole refreshes
    reports.add(fleet.api(f"/hosts/{MAINTAINED}")["last_report_at"])
    paths = [u.split("?")[0] for u in asked]
    events = [p for p in paths if p.endswith("/events")]
    links = [p for p in paths if p.endswith("/links/series")]
    assert len(events) <= 3, events  # 9 refreshes at most: the 4th and 8th (and one more)
    # one per new report or minute the window moved (and the first after the first view)
    assert len(links) <= 2 * len(reports) + 2, (links, reports)
    assert len(links) < 8


def test_a_host_page_left_before_it_drew_asks_nothing_more(fresh_page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    """The user leaves a host page whose first answers are still on their way: once they
    come, the page left behind does not go on to ask for its charts below the fold."""
    page = fresh_page
    held: list = []  # type: ignore[type-arg]
    page.route(f"**/api/v1/hosts/{MAINTAINED}/health*", lambda route: held.append(route))
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.url))
    page.goto(f"{fleet.url}/?refresh=1#/host/{MAINTAINED}")
    wait_until(page, "() => document.querySelector('main').dataset.view === 'host'")
    deadline = time.monotonic() + 120  # the route handler runs while Playwright is waited on
    while not held and time.monotonic() < deadline:
        page.wait_for_timeout(50)
    assert held, "the page never asked for the host's health"
    open_view(page, "/#/alerts", "alerts")
    asked.clear()
    for route in held:
        route.continue_()
    start = page.evaluate(UPDATES)
    wait_until(page, f"() => ({UPDATES})() >= {start + 2}")  # the alerts view refreshed twice
    late = [u for u in asked if f"/hosts/{MAINTAINED}/" in u]
    assert late == [], late
