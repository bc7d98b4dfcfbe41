"""The host page's time charts share one range, relative or absolute, kept in the URL (a
pasted link opens the same window); a zoom on one applies to the others, each has a
crosshair; the host's events are marked on them (an NVLink going down, maintenance, jobs);
any chart's series downloads as CSV."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest

from tests.browser.conftest import FAULTY, Fleet, is_pair_series, open_view, wait_until
from tests.browser.plotly import double_click_until, drag_zoom
from tests.conftest import SETTLE_S

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
    mine = f"/hosts/{FAULTY}/"  # a chart of the page left behind may still be answered
    with page.expect_response(lambda r: mine + "links/series?" in r.url) as links, \
            page.expect_response(lambda r: mine in r.url and is_pair_series(r)) as pair:
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
        assert any("GPU3 links 16, 17 down" in t for t in drawn["labels"]), drawn["labels"]
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



# The point of trace `name` nearest the middle of the x range shown (an earlier test may
# have zoomed), in page pixels, with its time (ms).
POINT_AT = """([id, name]) => { const el = document.getElementById(id), fl = el._fullLayout;
  const t = el.data.find(d => d.name === name); const box = el.getBoundingClientRect();
  const xa = fl.xaxis, ya = fl.yaxis, [lo, hi] = xa.range.map(v => xa.d2l(v));
  const ats = t.x.map(x => xa.d2l(x)), mid = (lo + hi) / 2;
  const i = ats.reduce((b, at, j) => Math.abs(at - mid) < Math.abs(ats[b] - mid) ? j : b, 0);
  return {x: box.left + xa._offset + xa.l2p(ats[i]), y: box.top + ya._offset + ya.l2p(t.y[i]),
          at: ats[i], inside: ats[i] >= lo && ats[i] <= hi, span: hi - lo}; }"""
CROSSHAIR_AT = """id => { const l = document.querySelector('#' + id + ' > .xhair');
  return l && !l.hidden ? Date.parse(l.dataset.at) : null; }"""
CROSSHAIR_LEFT = """([id, at]) => { const el = document.getElementById(id);
  const xa = el._fullLayout.xaxis, line = el.querySelector(':scope > .xhair');
  return [parseFloat(line.style.left), xa._offset + xa.l2p(at)]; }"""
# Plotly throttles hover (and the crosshair follows it), so the spike of an earlier step of
# the mouse's path can show first: wait until every crosshair reached the hovered time.
SHOWN_AT = """([ids, at, tol]) => ids.every(id => {
  const l = document.querySelector('#' + id + ' > .xhair:not([hidden])');
  return l && Math.abs(Date.parse(l.dataset.at) - at) <= tol; })"""
NONE_SHOWN = "ids => !ids.some(id => document.querySelector('#' + id + ' > .xhair:not([hidden])'))"
WHOLE = """id => { const xa = document.getElementById(id)._fullLayout.xaxis;
  return xa.d2l(xa.range[1]) - xa.d2l(xa.range[0]) > 5 * 3600 * 1000; }"""
PLOT_WIDTH = "id => document.getElementById(id)._fullLayout.xaxis._length"
TIME_CHARTS = ("series-chart", "throughput-chart", "errors-chart", "info-errors-chart")


def hover_until_crosshairs(page, others: list[str]) -> tuple[dict, float]:  # type: ignore[no-untyped-def]
    """Hover the series chart's middle point until every other chart's crosshair shows its
    time; the point and the ms one pixel spans. The axes of the charts settle a moment after
    a zoom is undone (the others follow the first by relayout), so a hover made while the
    series chart's axis still moved points at another time: a user would move the mouse
    again, and so does this, within the settle limit."""
    deadline = time.monotonic() + SETTLE_S
    while True:
        page.mouse.move(5, 5)
        point = page.evaluate(POINT_AT, ["series-chart", "measured (GB/s)"])
        assert point["inside"], point
        page.mouse.move(point["x"] - 30, point["y"])
        page.mouse.move(point["x"], point["y"], steps=3)
        px_ms = point["span"] / page.evaluate(PLOT_WIDTH, "series-chart")
        try:
            wait_until(page, SHOWN_AT, [others, point["at"], 3 * px_ms],
                       timeout_s=min(10.0, max(0.1, deadline - time.monotonic())))
            return point, px_ms
        except AssertionError:
            if time.monotonic() >= deadline:
                raise


def test_hovering_a_time_on_one_chart_draws_it_on_every_other(page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    open_view(page, f"/#/host/{FAULTY}?pair=1-2&test=ce_write&range=6h", "host")
    for chart in TIME_CHARTS:
        page.locator(f"#{chart}[data-ready]").wait_for()
    double_click_until(page, "series-chart", WHOLE, "series-chart")  # undoes an earlier zoom
    others = list(TIME_CHARTS[1:])
    point, px_ms = hover_until_crosshairs(page, others)
    for chart in others:
        at = page.evaluate(CROSSHAIR_AT, chart)
        assert abs(at - point["at"]) <= 3 * px_ms, (chart, at, point["at"])
        left, where = page.evaluate(CROSSHAIR_LEFT, [chart, at])  # at that time on its own axis
        assert abs(left - where) < 1.5, (chart, left, where)
    assert page.evaluate(CROSSHAIR_AT, "series-chart") is None  # the hovered one has its spike
    page.mouse.move(5, 5)  # leaving the chart takes the crosshair off every chart
    wait_until(page, NONE_SHOWN, others)


LINK_EVENTS = """async () => { const m = await import('/static/charts/marks.js');
  const at = (m) => `2026-12-01T${m}:00Z`;
  const health = {links: [{gpu: 3, link: 16, changes: [{at: at('10:00'), state: 'down'},
    {at: at('10:05'), state: 'up'}]}, {gpu: 3, link: 17, changes: []},
    {gpu: 4, link: 1, changes: [{at: at('09:00'), state: 'down'}]},
    {gpu: 4, link: 2, changes: [{at: at('09:00'), state: 'down'}]}]};
  const alerts = [{alertname: 'NVLinkDown', labels: {gpu: '3', link: '16'}, fired_at: at('10:01'),
    resolved_at: at('10:06')},
    {alertname: 'NVLinkDown', labels: {gpu: '3', link: '17'}, fired_at: at('11:00')}];
  return m.hostEvents({health, alerts, maintenance: null, jobEvents: []})
    .map(e => [e.at, e.label]); }"""


def test_link_marks_come_from_the_stored_state_changes(page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    """Down and up as the server stored them; a link alert adds a mark only for a port
    without a stored history (never a second mark for the same change)."""
    open_view(page, f"/#/host/{FAULTY}?pair=1-2&test=ce_write&range=6h", "host")
    assert page.evaluate(LINK_EVENTS) == [
        ["2026-12-01T10:00:00Z", "GPU3 link 16 down"],
        ["2026-12-01T10:05:00Z", "GPU3 link 16 up"],
        ["2026-12-01T09:00:00Z", "GPU4 links 1, 2 down"],  # ports that changed at once
        ["2026-12-01T11:00:00Z", "GPU3 link 17 down"]]
    # and the faulty host's marks on its charts are its stored changes
    health = fleet.api(f"/hosts/{FAULTY}/health")
    stored = {(x["link"], c["state"]) for x in health["links"] if x["gpu"] == 3
              for c in x["changes"]}
    assert {(16, "down"), (17, "down")} <= stored, stored
    page.locator("#series-chart[data-ready]").wait_for()
    labels = page.evaluate(LAYOUT, "series-chart")["labels"]
    assert "GPU3 links 16, 17 down" in labels, labels
