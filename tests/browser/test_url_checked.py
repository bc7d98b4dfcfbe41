"""Every URL parameter checked (issue 40): a value the page cannot follow is named in a
notice and ignored (a pair the host lacks selects nothing, so the matrix keeps its size; a
time that does not parse is named, not silently replaced by "up to now"); the range applies
to every time chart, the jobs chart included; an error view sets its own title."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.browser.conftest import FAULTY, Fleet, open_view, wait_until
from tests.browser.plotly import drag_zoom
from tests.browser.test_job_snapshots import wait_for_host

pytestmark = pytest.mark.browser

AXIS = "id => document.getElementById(id)._fullLayout.xaxis.range"


def test_a_pair_the_host_lacks_selects_nothing(page, fleet: Fleet, browser_context) -> None:  # type: ignore[no-untyped-def]
    _, watch = browser_context
    gpus = [g["index"] for g in fleet.api(f"/hosts/{FAULTY}")["gpus"]]
    open_view(page, f"/#/host/{FAULTY}?pair=9-12&test=nope&gpu=42&from=21:00Z&to=22:00Z", "host")
    notices = page.locator("#link-notices .notice").all_inner_texts()
    assert any("from=21:00Z is not a date and time" in n for n in notices), notices
    assert any("to=22:00Z is not a date and time" in n for n in notices), notices
    page.locator("#matrix-chart[data-ready]").wait_for()
    low, high = page.evaluate(AXIS, "matrix-chart")
    assert low >= min(gpus) - 1 and high < 9  # no phantom GPU9..GPU12 column
    symbols = page.evaluate("() => document.getElementById('matrix-chart').data"
                            ".filter(t => t.name === 'marks').flatMap(t => t.marker.symbol)")
    assert "square-open" not in symbols  # the selection's outline: none
    assert page.locator("table[aria-label='GPU inventory'] tr.selected").count() == 0
    watch.problems[:] = [p for p in watch.problems if "status of 404" not in p]


def test_an_absolute_range_reaches_the_jobs_chart(page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    wait_for_host(fleet)
    to = datetime.now(UTC).replace(second=0, microsecond=0) - timedelta(minutes=30)
    since = to - timedelta(hours=5)
    stamp = "%Y-%m-%dT%H:%M:%S.000Z"
    open_view(page, f"/#/host/hgx8-01?from={since.strftime(stamp)}&to={to.strftime(stamp)}", "host")
    wait_until(page, "() => document.getElementById('jobs-chart').dataset.ready === 'true'")
    for chart in ("jobs-chart", "throughput-chart"):
        low, high = page.evaluate(AXIS, chart)
        assert low.replace("T", " ").startswith(since.strftime("%Y-%m-%d %H:%M")), (chart, low)
        assert high.replace("T", " ").startswith(to.strftime("%Y-%m-%d %H:%M")), (chart, high)
    assert page.evaluate("() => document.getElementById('jobs-chart').layout.xaxis.showspikes")
    drag_zoom(page, "throughput-chart")  # a zoom on one time chart zooms the jobs chart too
    wait_until(page, """() => {
      const r = id => JSON.stringify(document.getElementById(id).layout.xaxis.range);
      return r('jobs-chart') === r('throughput-chart'); }""")


@pytest.mark.parametrize(("path", "title"), [
    ("/#/host/nope", "nope · not found · peerwatch"),
    ("/#/job/nosuchjob", "Job nosuchjob · not found · peerwatch"),
])
def test_an_error_view_sets_its_own_title(page, fleet: Fleet, browser_context, path: str,  # type: ignore[no-untyped-def]
                                          title: str) -> None:
    _, watch = browser_context
    open_view(page, f"/#/host/{FAULTY}", "host")
    page.evaluate("h => { location.hash = h; }", path[1:])
    page.locator("#view-error").wait_for(state="visible")
    wait_until(page, "t => document.title === t", title)
    open_view(page, "/#/fleet", "fleet")
    watch.problems[:] = [p for p in watch.problems if "status of 404" not in p]


def test_the_zoom_is_kept_in_the_url(page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    """A drag on a time chart puts the zoom in the URL; the URL opened again draws every time
    chart zoomed to it; a zoom that does not parse is a notice."""
    open_view(page, f"/#/host/{FAULTY}?pair=1-2&range=6h", "host")
    page.locator("#throughput-chart[data-ready]").wait_for()
    drag_zoom(page, "throughput-chart")
    wait_until(page, "() => location.hash.includes('zoom=')")
    zoomed = page.evaluate("location.hash")
    open_view(page, "/#/fleet", "fleet")
    open_view(page, "/" + zoomed, "host")
    wait_until(page, "() => document.getElementById('gpu-series-chart').dataset.ready === 'true'")
    ranges = page.evaluate("""() => ['series-chart', 'throughput-chart', 'errors-chart',
      'gpu-series-chart'].map(id => document.getElementById(id).layout.xaxis.range
      .map(t => new Date(String(t).replace(' ', 'T') + (String(t).endsWith('Z') ? '' : 'Z'))
      .getTime()))""")
    assert all(abs(r[0] - ranges[0][0]) < 1000 and abs(r[1] - ranges[0][1]) < 1000
               for r in ranges), (zoomed, ranges)
    width_h = (ranges[0][1] - ranges[0][0]) / 3.6e6
    assert width_h < 4  # zoomed in from the 6 h window
    open_view(page, f"/#/host/{FAULTY}?range=6h&zoom=yesterday", "host")
    notices = page.locator("#link-notices .notice").all_inner_texts()
    assert any("zoom=yesterday" in n for n in notices), notices
