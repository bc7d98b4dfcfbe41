"""The host page's time charts share one range, relative or absolute, kept in the URL (a
pasted link opens the same window); a zoom on one applies to the others, each has a
crosshair; the host's events are marked on them (an NVLink going down, maintenance, jobs);
any chart's series downloads as CSV (issue 21)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.browser.conftest import FAULTY, Fleet, open_view, wait_until
from tests.browser.plotly import drag_zoom

pytestmark = pytest.mark.browser

LAYOUT = "id => { const l = document.getElementById(id).layout; return {range: l.xaxis.range, " \
    "spikes: l.xaxis.showspikes, shapes: (l.shapes || []).map(s => s.name || ''), " \
    "labels: (l.annotations || []).map(a => a.text)}; }"


def test_an_absolute_range_from_the_url_is_what_every_chart_asks_for(page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    to = datetime.now(UTC).replace(second=0, microsecond=0) - timedelta(minutes=10)
    since = to - timedelta(minutes=40)
    stamp = "%Y-%m-%dT%H:%M:%S.000Z"
    path = (f"/#/host/{FAULTY}?pair=1-2&test=ce_write&from={since.strftime(stamp)}"
            f"&to={to.strftime(stamp)}")
    open_view(page, "/#/alerts", "alerts")
    with page.expect_response(lambda r: "/links/series?" in r.url) as links, \
            page.expect_response(lambda r: "/series?" in r.url and "/links/" not in r.url) as pair:
        open_view(page, path, "host")
    for answer in (links.value, pair.value):
        assert f"since={since.strftime(stamp).replace(':', '%3A')}" in answer.url, answer.url
        assert f"until={to.strftime(stamp).replace(':', '%3A')}" in answer.url, answer.url
    assert page.input_value("#range-from") == since.strftime("%Y-%m-%dT%H:%M")
    assert page.input_value("#range-to") == to.strftime("%Y-%m-%dT%H:%M")
    assert page.locator('#range-bar button[aria-pressed="true"]').count() == 0
    # picking a relative range again drops from/to from the URL
    page.locator('#range-bar button[data-range="1h"]').click()
    wait_until(page, "() => location.hash.includes('range=1h') && !location.hash.includes('from=')")


def test_events_crosshair_linked_zoom_and_csv(page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    open_view(page, f"/#/host/{FAULTY}?pair=1-2&test=ce_write&range=6h", "host")
    for chart in ("series-chart", "throughput-chart"):
        page.locator(f"#{chart}[data-ready]").wait_for()
        drawn = page.evaluate(LAYOUT, chart)
        assert drawn["spikes"] is True  # a crosshair across the chart
        assert "event link" in drawn["shapes"], drawn["shapes"]  # GPU3's links went down
        assert any("GPU3 link 16 down" in t for t in drawn["labels"]), drawn["labels"]
    drag_zoom(page, "series-chart")
    same = """() => { const range = id => document.getElementById(id).layout.xaxis.range;
      const a = range('series-chart'), b = range('throughput-chart');
      return a && b && a[0] === b[0] && a[1] === b[1]; }"""
    wait_until(page, same)
    with page.expect_download() as download:
        page.locator('button.csv[data-chart="series-chart"]').click()
    text = open(download.value.path(), encoding="utf-8").read()
    lines = text.splitlines()
    assert lines[0] == "series,time,value"
    measured = [line for line in lines[1:] if line.startswith("measured (GB/s)")]
    assert measured, lines[:5]
    series = page.evaluate("document.getElementById('series-chart').data"
                           ".find(t => t.name === 'measured (GB/s)').x.length")
    assert len(measured) == series
    assert download.value.suggested_filename == f"{FAULTY}-GPU1-GPU2-ce_write.csv"
