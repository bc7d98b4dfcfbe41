"""Words and colours an operator reads at a glance (issue 40): a healthy matrix cell is a calm
blue, not cividis's bright yellow (read as a warning); counts at 0 are quiet; an empty fleet
says how to connect the first probe; every CSV button names its chart."""

from __future__ import annotations

import json

import pytest

from tests.browser.conftest import FAULTY, Fleet, open_view

pytestmark = pytest.mark.browser


def _rgb(colour: str) -> tuple[int, int, int]:
    text = colour.lstrip("#")
    return int(text[0:2], 16), int(text[2:4], 16), int(text[4:6], 16)


def test_a_healthy_matrix_cell_is_not_a_warning_colour(page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    open_view(page, f"/#/host/{FAULTY}", "host")
    page.locator("#matrix-chart[data-ready]").wait_for()
    heat = page.evaluate("() => { const t = document.getElementById('matrix-chart').data"
                         ".find(d => d.type === 'heatmap');"
                         " return {scale: t.colorscale, zmin: t.zmin,"
                         " zmax: t.zmax}; }")
    assert isinstance(heat["scale"], list), heat  # its own scale, not a named one (cividis)
    healthy_from = (0.9 - heat["zmin"]) / (heat["zmax"] - heat["zmin"])  # ratio 0.9 and up
    for stop, colour in heat["scale"]:
        r, g, b = _rgb(colour)
        if stop >= healthy_from:
            assert b > r and b > g, (stop, colour)  # blue: never yellow, orange or red
    slow = _rgb(heat["scale"][0][1])
    assert slow[0] > slow[2]  # slow is warm: blue against orange reads apart for everyone
    assert "blue = as expected" in page.locator("#matrix-panel .legend").inner_text()


def test_zero_counts_are_quiet(page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    open_view(page, "/#/alerts", "alerts")
    open_view(page, "/#/fleet", "fleet")
    chips = page.locator(".chips .chip[data-count]")
    seen = chips.evaluate_all("cs => cs.map(c => [c.dataset.count, c.className])")
    assert any(n == "0" for n, _ in seen), seen  # the demo has no host down
    for n, cls in seen:
        coloured = any(c.startswith(("v-", "sev-")) for c in cls.split())
        assert (n == "0") == ("quiet" in cls.split()), (n, cls)
        assert not (n == "0" and coloured), (n, cls)


def test_an_empty_fleet_says_how_to_connect_the_first_probe(fresh_page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    page = fresh_page
    # the fleet as a new server answers it: no host yet (the rest of the API is the real one)
    page.route("**/api/v1/hosts", lambda route: route.fulfill(
        status=200, content_type="application/json", body=json.dumps({"hosts": []})))
    open_view(page, "/?refresh=86400#/fleet", "fleet")
    box = page.locator("#first-probe")
    assert box.is_visible()
    text = box.inner_text()
    assert "peerwatch token issue --host" in text
    assert f"peerwatch probe --server {fleet.url} --token-file" in text
    chips = page.locator(".chips .chip[data-count]")
    classes = chips.evaluate_all("cs => cs.map(c => c.className)")
    assert classes and all("quiet" in c for c in classes), classes


def test_every_csv_button_names_its_chart(page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    open_view(page, f"/#/host/{FAULTY}?pair=1-2&test=ce_write", "host")
    page.locator("#series-chart[data-ready]").wait_for()
    labels = page.locator("button.csv").all_inner_texts()
    assert len(labels) == 5 and len(set(labels)) == 5, labels
    assert all(label.startswith("⤓ CSV: ") for label in labels), labels


def test_a_fact_is_said_once_and_reasons_are_short(page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    """The host's long reason repeats its top fault and its problem lines: it is folded; a
    problem line says what is wrong, the catalog's action behind "what to do"."""
    open_view(page, f"/#/host/{FAULTY}", "host")
    health = fleet.api(f"/hosts/{FAULTY}/health")
    assert health["verdict"] != "healthy"
    fold = page.locator(".host-head details.reason-line")
    assert fold.get_attribute("open") is None
    assert not fold.locator("p").is_visible()
    assert fold.locator("p").text_content() == health["reason"]  # all of it, one click away
    head = page.locator(".host-head").inner_text()
    assert health["reason"] not in head
    for line in page.locator(".problem-list li").all_inner_texts():
        assert "action:" not in line and "[NVIDIA" not in line, line
