"""What the engineer paged at 3 am needs from the host and fleet pages: hover
labels that can be read, no cloud button, a bad deep link that costs one line and not the
page, judged and informational counters apart, and a skip link to the hosts table."""

from __future__ import annotations

import pytest

from tests.browser.conftest import FAULTY, Fleet, open_view, wait_until
from tests.browser.plotly import CELL_CENTRE, trace, traces

pytestmark = pytest.mark.browser

# The hover label now shown in `id`: its text, its lines, and the WCAG contrast ratio of its
# text colour against its background, both read from the computed style in the page.
HOVER_LABEL = """id => {
  const label = document.querySelector(`#${id} .hoverlayer .hovertext`);
  if (!label) return null;
  const rgb = c => c.match(/[\\d.]+/g).slice(0, 3).map(Number);
  const lum = c => { const [r, g, b] = rgb(c).map(v => v / 255)
      .map(v => v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
    return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
  const bg = getComputedStyle(label.querySelector('path')).fill;
  const fg = getComputedStyle(label.querySelector('text')).fill;
  const [hi, lo] = [lum(bg), lum(fg)].sort((a, b) => b - a);
  const lines = [...label.querySelectorAll('text tspan.line')].map(t => t.textContent);
  return {ratio: (hi + 0.05) / (lo + 0.05), bg, fg, lines,
          width: label.getBoundingClientRect().width,
          chart: document.getElementById(id).getBoundingClientRect().width};
}"""


def hover(page, chart: str, x: float, y: float) -> dict:  # type: ignore[no-untyped-def]
    """Move the mouse onto data point (x, y) of `chart`; the hover label that appears."""
    page.mouse.move(1, 1)
    page.locator(f"#{chart}").scroll_into_view_if_needed()
    at = page.evaluate(CELL_CENTRE, [chart, y, x])
    page.mouse.move(at["x"], at["y"], steps=3)
    wait_until(page, "id => !!document.querySelector(`#${id} .hoverlayer .hovertext`)", chart)
    label: dict = page.evaluate(HOVER_LABEL, chart)
    page.mouse.move(1, 1)
    return label


def test_hover_labels_are_readable_and_wrapped(page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    open_view(page, f"/#/host/{FAULTY}?test=ce_write", "host")
    cell = hover(page, "matrix-chart", 2, 1)  # GPU1 -> GPU2, the slow pair: a long reason
    assert cell["ratio"] >= 7, cell  # WCAG AAA for normal text; dark grey on black was ~2
    assert any("GPU1 → GPU2" in line for line in cell["lines"])
    assert any("degraded" in line for line in cell["lines"])
    assert all(len(line) <= 70 for line in cell["lines"]), cell["lines"]  # the reason wraps
    assert cell["width"] < cell["chart"]
    nodes = trace(page, "topology-chart", "nodes")
    i = nodes["customdata"].index("gpu3")
    node = hover(page, "topology-chart", nodes["x"][i], nodes["y"][i])
    assert node["ratio"] >= 7, node
    assert any("GPU3" in line or "NVLink" in line for line in node["lines"])


def test_no_cloud_button_and_no_logo_on_any_chart(page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    open_view(page, f"/#/host/{FAULTY}?pair=1-2", "host")
    page.wait_for_selector("#series-chart[data-ready]")
    charts = page.evaluate("""() => [...document.querySelectorAll('.js-plotly-plot')].map(el => ({
      id: el.id, logo: el._context.displaylogo, cloud: el._context.showSendToCloud,
      buttons: [...el.querySelectorAll('.modebar-btn')].map(b => b.dataset.title),
      logoLink: el.querySelectorAll('.modebar a[href*="plot.ly"], .modebar a[href*="plotly.com"]')
        .length}))""")
    assert len(charts) >= 5
    for chart in charts:
        assert chart["logo"] is False and chart["cloud"] is False, chart
        assert chart["buttons"], chart  # the modebar is there, zoom and the rest
        cloud = [b for b in chart["buttons"] if any(w in b for w in ("Share", "Cloud", "Studio"))]
        assert not cloud, chart
        assert chart["logoLink"] == 0, chart


def test_a_bad_deep_link_costs_one_line_not_the_page(page, fleet: Fleet, browser_context) -> None:  # type: ignore[no-untyped-def]
    _, watch = browser_context
    open_view(page, f"/#/host/{FAULTY}?pair=9-12&test=nope&gpu=42", "host")
    notices = page.locator("#link-notices .notice").all_inner_texts()
    assert len(notices) == 3, notices
    assert "no GPU9 and GPU12" in notices[1] and 'no test "nope"' in notices[0]
    assert "no GPU42" in notices[2]
    assert page.locator("#view-error").count() == 0
    assert page.locator("#pair-panel").is_hidden()
    for chart in ("topology-chart", "matrix-chart", "throughput-chart", "errors-chart"):
        assert page.locator(f"#{chart}[data-ready]").count() == 1, chart
    assert trace(page, "matrix-chart", "ce_write")  # the unknown test fell back to ce_write
    # the user fixes the URL in the same tab: the pair draws, and nothing reports an error
    open_view(page, f"/#/host/{FAULTY}?pair=1-2&test=ce_write", "host")
    page.wait_for_selector("#series-chart[data-ready]")
    assert page.locator("#link-notices .notice").count() == 0
    assert not page.locator("#pair-panel").is_hidden()
    # the 404 of the bad pair's series is the answer we asked for, logged by Chromium
    watch.problems[:] = [p for p in watch.problems if "status of 404" not in p]


def test_judged_and_informational_counters_are_charted_apart(page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    open_view(page, f"/#/host/{FAULTY}?range=1h", "host")
    judged = {t["name"] for t in traces(page, "errors-chart")} - {"window"}
    info = {t["name"] for t in traces(page, "info-errors-chart")} - {"window"}
    assert "GPU5 link 2 replay" in judged
    assert all(n.split()[-1] in ("replay", "recovery", "crc_flit") for n in judged), judged
    assert all(n.split()[-1] in ("crc_data", "ecc_data") for n in info), info
    titles = page.evaluate("""() => ['errors-chart', 'info-errors-chart'].map(
      id => document.getElementById(id).layout.title.text)""")
    assert titles[0].startswith("Judged") and "not judged" in titles[1]


def test_placement_opens_on_a_host_that_can_place_the_default_k(page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    open_view(page, "/#/alerts", "alerts")
    with page.expect_response(lambda r: "/scheduler/placement?" in r.url) as answer:
        open_view(page, "/#/placement", "placement")
    fit = fleet.api("/scheduler/hosts", min_healthy_gpus=4)
    chosen = page.input_value("#pl-host")
    assert chosen == fit["hosts"][0]["host"]
    assert answer.value.status == 200
    assert page.locator(".error-box").count() == 0
    assert page.locator("#placement-chart[data-ready]").count() == 1


def test_the_skip_link_reaches_the_first_host(fresh_page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    page = fresh_page
    open_view(page, "/?refresh=86400#/fleet", "fleet")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "skip-link"
    assert page.locator("#skip-link").inner_text() == "Skip to the hosts table"
    page.keyboard.press("Enter")
    first = page.locator('table[aria-label="Hosts"] tbody tr').first.get_attribute("data-key")
    assert page.evaluate("document.activeElement.dataset.key") == first
    assert page.evaluate("location.hash") == "#/fleet"  # the skip link is not a route


RESOURCES = """() => performance.getEntriesByType('resource').map(e => ({
  path: new URL(e.name).pathname, start: e.startTime, end: e.responseEnd}))"""


@pytest.mark.parametrize(("route", "view"), [(f"#/host/{FAULTY}?pair=1-2", "host"),
                                              ("#/placement", "placement")])
def test_plotly_loads_beside_the_api_calls_and_no_page_waits_on_hosts(  # type: ignore[no-untyped-def]
        fresh_page, fleet: Fleet, route: str, view: str) -> None:
    page = fresh_page
    open_view(page, f"/?refresh=86400{route}", view)
    loads = page.evaluate(RESOURCES)
    plotly = [r for r in loads if "/static/vendor/plotly-" in r["path"]]
    api = [r for r in loads if r["path"].startswith("/api/v1/")]
    assert plotly and api
    asked = min(r["start"] for r in plotly)
    if view == "host":  # plotly.js is asked first, at high priority, its API calls right after
        # (boot.js): it compiles while they are answered, never queued behind them
        assert asked <= min(r["start"] for r in api)
    else:  # Placement's calls are chained: plotly.js is asked for before the first leaves
        assert asked < min(r["start"] for r in api)
    assert asked < max(r["end"] for r in api)  # never after the answers
    assert "/api/v1/hosts" not in {r["path"] for r in api}  # the fleet's list: not needed here
