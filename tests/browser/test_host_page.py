"""The host page: what Plotly drew is what the API said, the faulty links and pair look it, and
a click on the matrix opens that pair's history."""

from __future__ import annotations

from datetime import datetime

import pytest

from tests.browser.conftest import (
    FAULTY,
    Fleet,
    is_pair_series,
    open_view,
    screenshot,
    wait_hash,
    wait_until,
)
from tests.browser.plotly import (
    annotations,
    click_cell,
    double_click_until,
    drag_zoom,
    edge_lines,
    trace,
    traces,
)

pytestmark = pytest.mark.browser

VERMILLION, ORANGE, GREEN = "#D55E00", "#E69F00", "#009E73"
COLOUR = {"down": VERMILLION, "degraded": ORANGE, "healthy": GREEN}


def test_matrix_plots_the_api_matrix(page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    open_view(page, f"/#/host/{FAULTY}?test=ce_write", "host")
    api = fleet.api(f"/hosts/{FAULTY}/matrix", test="ce_write")
    heat = trace(page, "matrix-chart", "ce_write")
    gpus = api["gpus"]
    assert heat["x"] == gpus and heat["y"] == gpus
    for cell in api["cells"]:
        i, j = gpus.index(cell["src"]), gpus.index(cell["dst"])
        assert heat["z"][i][j] == pytest.approx(cell["ratio"])
        assert heat["text"][i][j] == f"{cell['value'] / 1e9:.0f}"
        hover = heat["hovertext"][i][j]
        assert f"GPU{cell['src']} → GPU{cell['dst']}" in hover and cell["verdict"] in hover
        if cell["explained_by"] is not None:  # an explained pair says so
            assert f"explained by GPU{cell['explained_by']} ({cell['cause']})" in hover, hover
    owners = {c["explained_by"] for c in api["cells"]} - {None}
    assert 3 in owners  # its two links down: the pairs through GPU3 are not trusted
    slow = [c for c in api["cells"] if c["verdict"] == "degraded"]
    assert {(c["src"], c["dst"]) for c in slow} >= {(1, 2), (2, 1)}  # the injected BandwidthFactor
    marks = trace(page, "matrix-chart", "marks")
    assert len(marks["x"]) == len([c for c in api["cells"] if c["verdict"] in ("degraded", "down")])


def test_faulty_links_are_drawn_degraded(page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    with page.expect_response(lambda r: f"/hosts/{FAULTY}/topology" in r.url) as answer:
        open_view(page, f"/?refresh=1#/host/{FAULTY}", "host")  # a load: it asks anew
    topo = answer.value.json()  # what the page drew: the live fleet may judge anew meanwhile
    lines = edge_lines(page, "topology-chart")
    assert set(lines) == {edge["id"] for edge in topo["edges"]}  # every edge drawn, once
    for edge in topo["edges"]:
        line = lines[edge["id"]]
        if edge["verdict"] != "healthy":
            assert line["color"] == COLOUR[edge["verdict"]], edge
    gpu3 = next(e for e in topo["edges"] if e["id"] == "gpu3-nvswitch")
    assert gpu3["verdict"] == "down" and gpu3["width"] == 16
    labels = annotations(page, "topology-chart")
    assert "✕ NV16/18" in labels
    row = page.locator('table[aria-label="GPU inventory"] tbody tr[data-key="3"]')
    assert "16 / 18" in row.inner_text() and "down: 16, 17" in row.inner_text()
    problems = page.locator(".problem-list li").all_text_contents()  # the folded ones too
    assert any("GPU3 link 16" in p for p in problems)
    assert any("GPU1 → GPU2" in p for p in problems), "\n".join(problems)
    assert page.locator("#down-links").inner_text() == "✕ down: GPU3 link 16, GPU3 link 17"


def test_click_a_cell_opens_the_pair_series(page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    open_view(page, f"/#/host/{FAULTY}?test=ce_write", "host")
    assert page.locator("#pair-panel").is_hidden()
    with page.expect_response(is_pair_series) as answer:
        click_cell(page, "matrix-chart", row=1, col=2)
    wait_hash(page, "pair=1-2")
    page.wait_for_selector("#series-chart[data-ready]")
    series = answer.value.json()
    assert (series["src"], series["dst"], series["test"]) == (1, 2, "ce_write")
    measured = trace(page, "series-chart", "measured (GB/s)")
    assert measured["x"] == [b["start"] for b in series["buckets"]]
    assert measured["y"] == pytest.approx([b["mean"] / 1e9 for b in series["buckets"]])
    expected = trace(page, "series-chart", "expected")
    assert expected["y"][0] == pytest.approx(series["expected"]["value"] / 1e9)
    # the pair went to half speed 30 min ago: the newest samples sit near half the expected
    assert measured["y"][-1] < 0.6 * expected["y"][0] < measured["y"][0]
    shapes = page.evaluate("document.getElementById('series-chart').layout.shapes.length")
    assert shapes >= 1  # the low period is shaded
    assert "degraded" in page.locator("#pair-panel .facts").inner_text()
    screenshot(page, "host-pair")


def test_keyboard_picks_a_pair_and_swaps_it(page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    open_view(page, f"/#/host/{FAULTY}", "host")
    page.focus("#matrix-chart")
    page.keyboard.press("ArrowRight")  # the cursor starts on GPU0 -> GPU1
    live = page.locator("#view p.sr-only[aria-live]").inner_text()
    assert live.startswith("GPU0 → GPU2")
    page.keyboard.press("Enter")
    wait_hash(page, "pair=0-2")
    page.wait_for_selector("#series-chart[data-ready]")
    page.get_by_role("link", name="⇄ GPU2 → GPU0").click()
    wait_hash(page, "pair=2-0")
    page.get_by_role("button", name="1h").click()
    wait_hash(page, "range=1h")


UPDATES = "() => Number(document.querySelector('main').dataset.updates || 0)"
SERIES_RANGE = "document.getElementById('series-chart').layout.xaxis.range"


def width(axis_range: list[str]) -> float:
    """Seconds between the two ends of a Plotly date-axis range."""
    start, end = (datetime.fromisoformat(t.replace("Z", "")) for t in axis_range)
    return (end - start).total_seconds()


def refreshed(page, trigger: bool = True) -> None:  # type: ignore[no-untyped-def]
    """Wait for the page's next refresh to be drawn; `trigger` starts one now (the app
    refreshes when its tab becomes visible) instead of waiting for the timer."""
    before = page.evaluate(UPDATES)
    if trigger:
        page.evaluate("document.dispatchEvent(new Event('visibilitychange'))")
    wait_until(page, f"n => ({UPDATES})() > n", before)


def test_refresh_keeps_the_zoom_until_a_double_click(page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    open_view(page, f"/#/host/{FAULTY}?pair=1-2&range=6h", "host")
    drawn = page.evaluate(SERIES_RANGE)
    drag_zoom(page, "series-chart")
    zoom = page.evaluate(SERIES_RANGE)
    assert width(zoom) < 0.5 * width(drawn)
    for _ in range(2):
        refreshed(page)
        assert page.evaluate(SERIES_RANGE) == zoom
    double_click_until(page, "series-chart",
                       "() => document.getElementById('series-chart').layout.xaxis.autorange")
    refreshed(page)
    # the page's whole window again (autoranged over it), no longer the zoom
    assert page.evaluate("document.getElementById('series-chart').layout.xaxis.autorange")
    assert width(page.evaluate(SERIES_RANGE)) == pytest.approx(width(drawn), rel=0.05)


def test_pages_refresh_themselves(fresh_page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    page = fresh_page
    open_view(page, f"/?refresh=1#/host/{FAULTY}?pair=1-2", "host")  # a bookmarked URL
    page.wait_for_selector("#series-chart[data-ready]")
    for _ in range(2):  # every second with ?refresh=1
        refreshed(page, trigger=False)
    assert "pair=1-2" in page.evaluate("location.hash")
    assert not page.locator("#pair-panel").is_hidden()
    assert len(traces(page, "series-chart")) > 0
    screenshot(page, "host")


def test_link_charts_plot_the_counter_rates(page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    # off the app first: a series request an earlier test's page still had in flight would
    # otherwise answer the wait below and lose its body to the navigation (seen in CI)
    page.goto("about:blank")
    with page.expect_response(lambda r: "/links/series?" in r.url) as answer:
        # a load, so no 1-second refresh (an earlier test's ?refresh=1) redraws from newer data
        open_view(page, f"/?refresh=86400#/host/{FAULTY}?range=1h", "host")
    series = answer.value.json()
    link = next(x for x in series["links"] if (x["gpu"], x["link"]) == (5, 2))
    rising = trace(page, "errors-chart", "GPU5 link 2 replay")
    assert rising["x"] == [p["start"] for p in link["points"]]
    assert rising["y"] == pytest.approx([p["replay_per_s"] for p in link["points"]])
    assert max(v for v in rising["y"] if v is not None) > 0
    names = {t["name"] for t in traces(page, "errors-chart")} - {"window"}
    assert all(n.startswith("GPU5 link 2") for n in names)  # nothing else rose
    tx = {t["name"]: t for t in traces(page, "throughput-chart") if t["name"] != "window"}
    assert set(tx) == {f"GPU{g} TX" for g in range(8)}


def test_an_unknown_host_says_so(page, fleet: Fleet, browser_context) -> None:  # type: ignore[no-untyped-def]
    _, watch = browser_context
    page.evaluate("() => { location.hash = '#/host/no-such-host'; }")
    page.wait_for_selector("#view-error")
    assert "no-such-host" in page.locator("#view-error").inner_text()
    page.wait_for_load_state("networkidle")
    open_view(page, "/#/fleet", "fleet")
    assert page.locator("#view-error").count() == 0
    # Chromium logs the API's 404s as console errors; they are the answer we asked for.
    watch.problems[:] = [p for p in watch.problems if "status of 404" not in p]
