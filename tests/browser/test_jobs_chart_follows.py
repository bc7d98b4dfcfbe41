"""The jobs chart is one of the host page's time charts (issue 40: it followed neither the
range, the zoom nor the crosshair): a zoom kept in the URL draws it zoomed like the others,
and hovering a time on it draws that time on the others (one crosshair across them)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.browser.conftest import Fleet, open_view, wait_until
from tests.browser.test_job_snapshots import MARKER_CENTRE, wait_for_host

pytestmark = pytest.mark.browser

RANGE_MS = """id => { const xa = document.getElementById(id)._fullLayout.xaxis;
  return xa.range.map(v => xa.d2l(v)); }"""
CROSSHAIR_AT = """id => { const l = document.querySelector('#' + id + ' > .xhair:not([hidden])');
  return l ? Date.parse(l.dataset.at) : null; }"""
PER_PX = """id => { const xa = document.getElementById(id)._fullLayout.xaxis;
  const [lo, hi] = xa.range.map(v => xa.d2l(v)); return (hi - lo) / xa._length; }"""


def test_the_jobs_chart_takes_the_urls_zoom_and_the_crosshair(page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    wait_for_host(fleet)
    now = datetime.now(UTC).replace(second=0, microsecond=0)
    # job 81240 ran 1.8 h ago; the test's demo has no backfill: its counters are the live ones
    a, b = now - timedelta(hours=2), now + timedelta(minutes=1)
    stamp = "%Y-%m-%dT%H:%M:%S.000Z"
    open_view(page, "/#/fleet", "fleet")
    # (the page writes the zoom back into its URL in its own spelling: wait for the view)
    page.evaluate("h => { location.hash = h; }",
                  f"#/host/hgx8-01?range=6h&zoom={a.strftime(stamp)}~{b.strftime(stamp)}")
    wait_until(page, """() => { const m = document.querySelector('main');
      return m.dataset.ready === 'host' && location.hash.includes('zoom=')
        && !m.querySelector('[data-pending]'); }""")
    wait_until(page, "() => document.getElementById('jobs-chart').dataset.ready === 'true'")
    want = [a.timestamp() * 1000, b.timestamp() * 1000]
    for chart in ("jobs-chart", "throughput-chart"):
        wait_until(page, f"""() => {{ const r = ({RANGE_MS})('{chart}');
          return Math.abs(r[0] - {want[0]}) < 1000 && Math.abs(r[1] - {want[1]}) < 1000; }}""")
    # hovering job 81240's epilog on the jobs chart draws its time on the other charts
    page.locator("#jobs-chart").scroll_into_view_if_needed()
    epilog = page.evaluate("() => document.getElementById('jobs-chart').data"
                           ".find(t => t.name === 'epilog')")
    i = epilog["customdata"].index("81240")
    at_ms = page.evaluate("t => Date.parse(t.replace(' ', 'T') + (t.endsWith('Z') ? '' : 'Z'))",
                          epilog["x"][i])
    tolerance = 3 * page.evaluate(PER_PX, "throughput-chart")
    near = f"""() => {{ const at = ({CROSSHAIR_AT})('throughput-chart');
      return at !== null && Math.abs(at - {at_ms}) <= {tolerance}; }}"""
    for attempt in range(3):  # Plotly throttles hover: an earlier step of the path may show
        centre = page.evaluate(MARKER_CENTRE, ["jobs-chart", "epilog", i])
        page.mouse.move(centre["x"] - 20, centre["y"])
        page.mouse.move(centre["x"], centre["y"], steps=3)
        try:
            wait_until(page, near, timeout_s=10.0)
            break
        except AssertionError:
            if attempt == 2:
                raise
    page.mouse.move(5, 5)
    wait_until(page, "() => !document.querySelector('#throughput-chart > .xhair:not([hidden])')")
