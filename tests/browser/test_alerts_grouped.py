"""The alerts page as an operator uses it: one line per host and object with its
absolute start and duration, history, ack and silence with the admin token typed once per tab
(never in the URL), links that scroll to their object, and a phone layout."""

from __future__ import annotations

from datetime import datetime

import httpx
import pytest

from tests.browser.conftest import FAULTY, Fleet, open_view, wait_hash, wait_until
from tests.browser.demo_fleet import ADMIN_TOKEN

pytestmark = pytest.mark.browser


def object_key(a: dict) -> str:
    labels = a["labels"]
    if "peer_gpu" in labels:
        lo, hi = sorted((int(labels["gpu"]), int(labels["peer_gpu"])))
        return f"pair {lo}-{hi}"
    if "gpu" in labels:
        return f"gpu {labels['gpu']}"
    return f"switch {labels['switch']}" if "switch" in labels else "host"


def start(a: dict) -> str:
    return str(a["fired_at"] or a["active_since"])


def utc(text: str) -> str:
    """The dashboard's absolute time: '2026-12-01 04:12:00Z'."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).strftime("%Y-%m-%d %H:%M:%SZ")


def test_alerts_are_grouped_by_host_and_object(page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    with page.expect_response(lambda r: r.url.endswith(f"/api/v1/alerts?host={FAULTY}")) as answer:
        open_view(page, f"/#/alerts?host={FAULTY}", "alerts")
    alerts = answer.value.json()["alerts"]
    groups: dict[str, list[dict]] = {}
    for a in alerts:
        groups.setdefault(object_key(a), []).append(a)
    lines = page.locator("tbody.group")
    assert lines.count() == len(groups)
    keys = lines.evaluate_all("gs => gs.map(g => g.dataset.group.split('\\u001f')[1])")
    assert sorted(keys) == sorted(groups)
    assert page.locator("tr.member:visible").count() == 0  # folded: one line per object
    pair = groups["pair 1-2"]
    line = page.locator("tbody.group").nth(keys.index("pair 1-2"))
    assert "GPU1 ↔ GPU2" in line.locator("tr.group-row").inner_text()
    started = line.locator("tr.group-row td.started time")
    assert started.get_attribute("datetime") == min(start(a) for a in pair)
    assert started.inner_text() == utc(min(start(a) for a in pair))
    assert "so far" in line.locator("tr.group-row td.lasted").inner_text()
    # the history of one alert, read from /alerts/{id}
    line.locator("button.unfold").click()
    member = line.locator("tr.member").first
    with page.expect_response(lambda r: "/api/v1/alerts/" in r.url) as detail:
        member.locator("button.history-button").click()
    history = detail.value.json()["history"]
    assert history
    items = line.locator(".history-list li")
    items.first.wait_for()
    assert items.count() == len(history)
    assert history[0]["state"] in items.first.inner_text()


def test_a_link_alert_scrolls_to_and_outlines_its_link(page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    open_view(page, f"/#/alerts?host={FAULTY}", "alerts")
    line = page.locator("tbody.group").filter(has_text="GPU3: links 16–17").first
    line.locator("button.unfold").click()
    line.locator("tr.member").get_by_role("link", name="GPU3 link 16").first.click()
    wait_hash(page, "link=16")
    page.wait_for_selector('main[data-ready="host"]:not(:has([data-pending]))')
    wait_until(page, "() => !!document.querySelector('.target')")
    target = page.locator(".target")
    # GPU3's down links are one line (issue 40), the link asked for among them
    assert target.count() == 1 and target.get_attribute("data-what") == "GPU3 links 16, 17"
    assert target.get_attribute("data-links") == "16,17"
    link = next(x for x in fleet.api(f"/hosts/{FAULTY}/health")["links"]
                if (x["gpu"], x["link"]) == (3, 16))
    assert link["since"] and f"since {utc(link['since'])}" in target.inner_text()
    assert target.is_visible()
    box = target.bounding_box()
    assert box and 0 <= box["y"] < page.viewport_size["height"]  # scrolled into view
    outline = page.evaluate("getComputedStyle(document.querySelector('.target')).outlineStyle")
    assert outline == "solid"


def test_ack_and_silence_with_the_token_kept_for_the_tab(  # type: ignore[no-untyped-def]
        page, fleet: Fleet, browser_context) -> None:
    _, watch = browser_context
    open_view(page, f"/#/alerts?host={FAULTY}", "alerts")
    line = page.locator("tbody.group").filter(has_text="GPU3: links 16–17").first
    line.locator("button.ack").click()  # no token yet: the form asks for one
    assert page.locator("details.admin").get_attribute("open") is not None
    assert page.evaluate("document.activeElement.id") == "admin-token"
    # a mistyped token is refused on entry (GET /admin/check), not kept as "token set"
    page.fill("#admin-token", ADMIN_TOKEN + "x")
    page.fill("#admin-name", "night-shift")
    with page.expect_response(lambda r: "/api/v1/admin/check" in r.url) as checked:
        page.get_by_role("button", name="Use for this tab").click()
    assert checked.value.status == 403
    wait_until(page, "() => document.getElementById('admin-state').dataset.refused === 'true'")
    assert "not an admin credential" in page.locator("#admin-state").inner_text()
    assert page.evaluate("sessionStorage.getItem('peerwatch.adminToken')") is None
    page.fill("#admin-token", ADMIN_TOKEN)
    page.get_by_role("button", name="Use for this tab").click()
    wait_until(page, "t => sessionStorage.getItem('peerwatch.adminToken') === t", ADMIN_TOKEN)
    # the refused check's 403 is the answer asked for, logged by Chromium
    watch.problems[:] = [p for p in watch.problems if "status of 403" not in p]
    def is_ack(r) -> bool:  # type: ignore[no-untyped-def]
        return r.url.endswith("/ack") and r.request.method == "POST"

    with page.expect_response(is_ack) as acked:
        line.locator("button.ack").click()
    assert acked.value.status == 200
    assert acked.value.request.headers["authorization"] == f"Bearer {ADMIN_TOKEN}"
    wait_until(page, "() => document.querySelector('.action-status').textContent"
               ".startsWith('acknowledged')")
    link_alerts = [a for a in fleet.api("/alerts", host=FAULTY)["alerts"]
                   if a["labels"].get("link") == "16" and a["labels"].get("gpu") == "3"]
    said = "admin:admin-token (says night-shift)"  # a shared token: who it names, marked
    assert link_alerts and all(a["acknowledged"]["by"] == said for a in link_alerts)
    gpu3 = [a for a in fleet.api("/alerts", host=FAULTY)["alerts"] if a["labels"].get("gpu") == "3"]
    assert len(gpu3) >= 3 and all(a["acknowledged"] for a in gpu3)  # the whole GPU's line
    line = page.locator("tbody.group").filter(has_text="GPU3: links 16–17").first
    row = line.locator("tr.group-row")
    wait_until(page, "() => !!document.querySelector('tr.group-row.quiet')")
    assert "quiet" in row.get_attribute("class")  # muted: someone is on it
    assert f"acked by {said}" in row.inner_text()
    page.fill("#silence-comment", "cable reseat booked, ticket 4711")
    line.locator("select.silence-hours").select_option("4")
    posted: list[str] = []
    page.on("request", lambda r: posted.append(r.url) if r.method == "POST"
            and r.url.endswith("/api/v1/silences") else None)
    with page.expect_response(lambda r: r.url.endswith("/api/v1/silences")) as silenced:
        line.locator("button.silence").click()
    assert silenced.value.status == 201
    made = silenced.value.json()
    matchers = [{k: m[k] for k in ("name", "value")} for m in made["matchers"]]
    # the GPU's alerts (several rules, links 16 and 17) are one silence: what they all share
    assert {"name": "host", "value": FAULTY} in matchers
    assert {"name": "gpu", "value": "3"} in matchers
    wait_until(page, "() => document.querySelector('.action-status').textContent"
                     ".includes('(1 silence)')")
    assert len(posted) == 1, posted
    assert made["created_by"] == said
    assert made["comment"] == "cable reseat booked, ticket 4711"
    silences = httpx.get(f"{fleet.url}/api/v1/silences", timeout=10).json()["silences"]
    assert any(s["id"] == made["id"] for s in silences)
    # the silences view lists it, with its comment and end; the alert says until when, by whom
    entry = page.locator(f'#silences tbody tr[data-key="{made["id"]}"]')
    entry.wait_for()
    assert "cable reseat booked" in entry.inner_text() and "night-shift" in entry.inner_text()
    wait_until(page, "() => document.querySelector('tbody.group tr.group-row.quiet')"
               "?.textContent.includes('silenced until')")
    # expire it from the view: the server ends it now
    with page.expect_response(lambda r: r.request.method == "DELETE") as expired:
        entry.locator("button.expire").click()
    assert expired.value.status == 200 and not expired.value.json()["active"]
    gone = "id => !document.querySelector(`#silences tr[data-key='${id}'] button.expire`)"
    wait_until(page, gone, made["id"])
    # the token never reached a URL: not the page's, not any request's
    assert ADMIN_TOKEN not in page.url
    assert ADMIN_TOKEN not in page.evaluate(
        "performance.getEntriesByType('resource').map(e => e.name).join(' ')")
    page.get_by_role("button", name="Forget").click()
    assert page.evaluate("sessionStorage.getItem('peerwatch.adminToken')") is None


def test_on_a_phone_each_alert_keeps_host_and_reason(browser, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    context = browser.new_context(base_url=fleet.url, viewport={"width": 390, "height": 844},
                                  is_mobile=True, has_touch=True)
    try:
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        open_view(page, "/?refresh=86400#/alerts", "alerts")
        rows = page.locator("tr.group-row")
        assert rows.count() >= 1
        for i in range(rows.count()):
            row = rows.nth(i)
            for cell in ("td.host-cell", "td.reason", "td.concerns"):
                box = row.locator(cell).bounding_box()
                assert box and box["width"] > 0, (cell, box)
                assert box["x"] >= 0 and box["x"] + box["width"] <= 391, (cell, box)
            assert row.locator("td.reason").inner_text().strip()
        overflow = page.evaluate("document.documentElement.scrollWidth")
        assert overflow <= 391  # no sideways scrolling to find the reason
        assert not errors
    finally:
        context.close()


def test_alerts_roll_up_by_host_and_fit_1440_px(page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    open_view(page, "/#/alerts?state=all", "alerts")
    hosts = page.locator("tbody.host-group")
    assert hosts.count() >= 2
    first = hosts.first.get_attribute("data-host")
    objects = page.locator(f'tbody.group[data-host="{first}"]')
    assert objects.count() >= 1 and objects.first.is_visible()
    hosts.first.locator("button.unfold-host").click()  # fold the host: its objects hide
    wait_until(page, "h => [...document.querySelectorAll(`tbody.group`)].filter(g => "
               "g.dataset.host === h).every(g => g.hidden)", first)
    hosts.first.locator("button.unfold-host").click()
    width = page.evaluate("[document.documentElement.scrollWidth, "
                          "document.querySelector('.table-wrap').scrollWidth, "
                          "document.querySelector('.table-wrap').clientWidth]")
    assert width[0] <= 1440 and width[1] <= width[2] + 1, width  # no sideways scrolling
    for select in page.locator("select.silence-hours").all()[:5]:
        box = select.bounding_box()
        assert box and box["x"] + box["width"] <= 1440
