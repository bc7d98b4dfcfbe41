"""Weight: plotly.js, the partial bundle with its version in its name, is
fetched only by the views that draw a chart; a new tab fetches the whole module graph at
once; an unchanged API answer comes back as a bodiless 304."""

from __future__ import annotations

import pytest

from peerwatch.probes.sim.presets import rack_cluster_uuid
from tests.browser.conftest import FAULTY, Fleet, open_view, wait_until

pytestmark = pytest.mark.browser

# Chromium reports a 304 (a copy it revalidated) as status 200 whose body did not come over
# the wire: it counts 300 bytes of headers per response, so transferSize < body + 300.
REVALIDATED = ("e.encodedBodySize > 0 && e.transferSize > 0 "
               "&& e.transferSize < e.encodedBodySize + 300")
RESOURCES = f"""() => performance.getEntriesByType('resource').map(e => ({{
  path: new URL(e.name).pathname + new URL(e.name).search, revalidated: {REVALIDATED},
  bytes: e.transferSize, body: e.encodedBodySize }}))"""


@pytest.mark.parametrize(("route", "view"), [
    ("#/fleet", "fleet"), ("#/alerts", "alerts"),
    (f"#/domain/{rack_cluster_uuid('nvl72-a')}", "domain")])  # the demo's rack
def test_views_without_charts_never_fetch_plotly(fresh_page, fleet: Fleet, route: str,  # type: ignore[no-untyped-def]
                                                 view: str) -> None:
    page = fresh_page
    open_view(page, f"/?refresh=86400{route}", view)
    paths = [r["path"] for r in page.evaluate(RESOURCES)]
    assert not [p for p in paths if "plotly" in p], paths
    assert page.evaluate("typeof window.Plotly") == "undefined"
    assert any(p.endswith("/views/host.js") for p in paths)  # preloaded: no round trip later


def test_a_host_page_fetches_the_partial_bundle_and_gets_304s(fresh_page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    page = fresh_page
    open_view(page, f"/?refresh=1#/host/{FAULTY}", "host")
    [plotly] = [r["path"] for r in page.evaluate(RESOURCES) if "plotly" in r["path"]]
    assert plotly.startswith("/static/vendor/plotly-cartesian-") and plotly.endswith(".min.js")
    assert page.evaluate("typeof window.Plotly") == "object"
    page.evaluate("performance.clearResourceTimings()")
    wait_until(page, f"""() => performance.getEntriesByType('resource')
      .some(e => new URL(e.name).pathname.endsWith('/alerts') && {REVALIDATED})""")
    unchanged = [r for r in page.evaluate(RESOURCES) if r["revalidated"]]
    assert unchanged and all(r["bytes"] == 300 for r in unchanged), unchanged  # headers only
