"""Xid/SXid events on the host page: the demo's hgx8-01 logs Xid 74 on GPU4 NVLink 3 (and
an SXid in a 4-host fleet); the page lists them as the API does, with the catalog's meaning,
and marks them on its time charts."""

from __future__ import annotations

import time

import pytest

from tests.browser.conftest import Fleet, open_view, wait_until
from tests.browser.test_job_snapshots import wait_for_host

pytestmark = pytest.mark.browser

HOST = "hgx8-01"


def test_events_are_listed_and_marked_on_the_charts(page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    wait_for_host(fleet)
    deadline = time.monotonic() + 90
    while not any(e["label"] == "Xid 74" and e["link"] == 3
                  for e in fleet.api(f"/hosts/{HOST}/events")["events"]):
        assert time.monotonic() < deadline, "the demo's Xid 74 never reached the server"
        time.sleep(1)
    open_view(page, f"/#/host/{HOST}?range=24h", "host")
    wait_until(page, "() => !document.getElementById('events-panel').hidden")
    rows = page.locator("#events-list tbody tr")
    wait_until(page, "() => document.querySelectorAll('#events-list tbody tr').length > 0")
    texts = rows.all_inner_texts()
    assert any("Xid 74" in t and "GPU4 link 3" in t and "NVLink error" in t for t in texts), texts
    assert "NVIDIA Xid catalog" in page.locator("#events-catalog").inner_text()
    wait_until(page, "() => (document.getElementById('throughput-chart')._fullLayout?.shapes || [])"
                     ".some(s => s.name === 'event xid')")
    labels = page.evaluate("() => document.getElementById('throughput-chart')._fullLayout"
                           ".annotations.map(a => a.text)")
    assert any(text.startswith("⚡ Xid 74") for text in labels), labels


def test_a_recurring_event_is_one_row_and_one_band(page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    """The demo's GPU4 NVLink 3 logs Xid 74 every 30 s: one row with its count and first and
    last time, one band on each chart (issue 40), not a row and a mark per occurrence."""
    wait_for_host(fleet)
    deadline = time.monotonic() + 180
    while True:
        listed = [e for e in fleet.api(f"/hosts/{HOST}/events")["events"]
                  if e["label"] == "Xid 74" and e["gpu"] == 4 and e["link"] == 3]
        if len(listed) >= 2:
            break
        assert time.monotonic() < deadline, f"the demo's recurring Xid 74 was not stored: {listed}"
        time.sleep(1)
    open_view(page, "/#/fleet", "fleet")  # a fresh host page, loaded after those events
    open_view(page, f"/#/host/{HOST}?range=6h", "host")
    wait_until(page, "() => document.querySelectorAll('#events-list tbody tr').length > 0")
    rows = page.locator('#events-list tbody tr[data-where="GPU4 link 3"][data-event="xid74"]')
    assert rows.count() == 1  # one per (object, event); it was one per occurrence
    # every occurrence counted (more may have come between the API's answer and the page's)
    assert int(rows.first.get_attribute("data-count") or 0) >= sum(e["count"] or 1 for e in listed)
    assert f"×{rows.first.get_attribute('data-count')}" in rows.first.inner_text()
    wait_until(page, "() => (document.getElementById('throughput-chart')._fullLayout?.shapes || [])"
                     ".some(s => s.name === 'event xid')")
    layout = page.evaluate("() => { const l = document.getElementById('throughput-chart')"
                           "._fullLayout;"
                           " return {shapes: l.shapes.map(s => [s.name, s.type]),"
                           " notes: l.annotations.map(a => a.text)}; }")
    xid_shapes = [s for s in layout["shapes"] if s[0] == "event xid"]
    distinct = {(e["label"], e["gpu"], e["link"], e["switch"])
                for e in fleet.api(f"/hosts/{HOST}/events")["events"]}
    assert len(xid_shapes) <= len(distinct), layout["shapes"]
    assert ["event xid", "rect"] in xid_shapes
    assert any(n.startswith("⚡ Xid 74") and "×" in n for n in layout["notes"]), layout["notes"]
