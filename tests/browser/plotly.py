"""Reading what Plotly drew, and clicking where it drew it, from a Playwright page."""

from __future__ import annotations

import time
from typing import Any

from tests.browser.conftest import wait_until
from tests.conftest import SETTLE_S

TRACES = """id => document.getElementById(id).data.map(t => ({
  type: t.type, name: t.name, x: t.x, y: t.y, z: t.z, text: t.text, hovertext: t.hovertext,
  line: t.line, marker: t.marker, customdata: t.customdata }))"""

# the topology's edge lines: a trace per line style, its edges' ids in `meta.edges`
EDGE_LINES = """id => Object.fromEntries(document.getElementById(id).data
  .filter(t => t.meta && t.meta.edges).flatMap(t => t.meta.edges.map(e => [e, t.line])))"""

ANNOTATIONS = "id => (document.getElementById(id).layout.annotations || []).map(a => a.text)"

CELL_CENTRE = """([id, row, col]) => {
  const el = document.getElementById(id);
  const xa = el._fullLayout.xaxis, ya = el._fullLayout.yaxis;
  const box = el.getBoundingClientRect();
  return {x: box.left + xa._offset + xa.l2p(col), y: box.top + ya._offset + ya.l2p(row)};
}"""


def traces(page: Any, element_id: str) -> list[dict[str, Any]]:
    """The data of the Plotly chart in element `element_id`, as plotted."""
    result: list[dict[str, Any]] = page.evaluate(TRACES, element_id)
    return result


def trace(page: Any, element_id: str, name: str) -> dict[str, Any]:
    found = [t for t in traces(page, element_id) if t["name"] == name]
    assert found, f"no trace named {name!r} in #{element_id}"
    return found[0]


def edge_lines(page: Any, element_id: str) -> dict[str, dict[str, Any]]:
    """The line (colour, width, dash) each topology edge was drawn with, by the edge's id."""
    result: dict[str, dict[str, Any]] = page.evaluate(EDGE_LINES, element_id)
    return result


def annotations(page: Any, element_id: str) -> list[str]:
    result: list[str] = page.evaluate(ANNOTATIONS, element_id)
    return result


def click_cell(page: Any, element_id: str, row: float, col: float) -> None:
    """A real mouse click at data coordinates (col, row) of the chart."""
    page.locator(f"#{element_id}").scroll_into_view_if_needed()
    at = page.evaluate(CELL_CENTRE, [element_id, row, col])
    page.mouse.click(at["x"], at["y"])


PLOT_BOX = """id => { const el = document.getElementById(id), fl = el._fullLayout;
  const box = el.getBoundingClientRect();
  return {left: box.left + fl.xaxis._offset, width: fl.xaxis._length,
          top: box.top + fl.yaxis._offset, height: fl.yaxis._length}; }"""


def drag_zoom(page: Any, element_id: str, start: float = 0.3, end: float = 0.6) -> None:
    """Zoom the x axis the way a user does: drag across the plot from `start` to `end`
    (fractions of its width), at mid height."""
    page.locator(f"#{element_id}").scroll_into_view_if_needed()
    box = page.evaluate(PLOT_BOX, element_id)
    y = box["top"] + box["height"] / 2
    page.mouse.move(box["left"] + box["width"] * start, y)
    page.mouse.down()
    page.mouse.move(box["left"] + box["width"] * (start + end) / 2, y, steps=4)
    page.mouse.move(box["left"] + box["width"] * end, y, steps=4)
    page.mouse.up()


def double_click_until(page: Any, element_id: str, predicate: str, arg: object = None) -> None:
    """Double-click the middle of the plot until `predicate(arg)` holds in the page. Plotly
    counts a double-click by the time between the two mousedown handlers (300 ms): on a busy
    machine the first click's handling can outlast that and the pair reads as two clicks, so
    a click that did not take is given again, as a user would, within the settle limit."""
    page.locator(f"#{element_id}").scroll_into_view_if_needed()
    deadline = time.monotonic() + SETTLE_S
    while True:
        box = page.evaluate(PLOT_BOX, element_id)
        page.mouse.dblclick(box["left"] + box["width"] / 2, box["top"] + box["height"] / 2)
        try:
            wait_until(page, predicate, arg, timeout_s=min(10.0, deadline - time.monotonic()))
            return
        except AssertionError:
            if time.monotonic() >= deadline:
                raise AssertionError(
                    f"a double-click on #{element_id} never made {predicate} hold") from None
