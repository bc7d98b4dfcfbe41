"""Job snapshots on the host page (the demo stores a few jobs): a prolog and an epilog marker
per job on the timeline, as the API lists them; hovering a marker names the job, clicking it
(or the job's chip) shows the job's diff lines, the broken job's link first."""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest

from tests.browser.conftest import Fleet, open_view, wait_until
from tests.browser.plotly import trace

pytestmark = pytest.mark.browser

HOST = "hgx8-01"  # the demo's host whose job 81240 saw GPU2 link 7 go down
MARKER_CENTRE = """([id, name, i]) => {
  const el = document.getElementById(id);
  const t = el.data.find(d => d.name === name);
  const xa = el._fullLayout.xaxis, ya = el._fullLayout.yaxis;
  const box = el.getBoundingClientRect();
  return {x: box.left + xa._offset + xa.l2p(xa.d2l(t.x[i])),
          y: box.top + ya._offset + ya.l2p(ya.d2l(t.y[i]))};
}"""


def wait_for_host(fleet: Fleet, within_s: float = 90.0) -> None:
    """The demo's hosts report a few seconds after the fleet fixture is ready, and the host
    page needs their first sweep (the matrix is a 404 before it)."""
    deadline = time.monotonic() + within_s
    matrix = f"{fleet.url}/api/v1/hosts/{HOST}/matrix"
    while httpx.get(matrix, params={"test": "ce_write"}, timeout=10).status_code != 200:
        assert time.monotonic() < deadline, f"{HOST} never swept"
        time.sleep(0.5)


def diff_lines(page: Any) -> list[str]:
    return page.locator("#job-diff li").all_inner_texts()


def test_jobs_are_markers_and_a_click_shows_the_diff(page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    wait_for_host(fleet)
    open_view(page, f"/#/host/{HOST}?range=24h", "host")
    page.locator("#jobs-panel").scroll_into_view_if_needed()
    wait_until(page, "() => document.getElementById('jobs-chart').dataset.ready === 'true'")
    listed = fleet.api(f"/hosts/{HOST}/snapshots")["snapshots"]
    for phase in ("prolog", "epilog"):
        drawn = trace(page, "jobs-chart", phase)
        api = [s for s in listed if s["phase"] == phase]
        assert sorted(drawn["customdata"]) == sorted(s["job_id"] for s in api)
        assert all(f"job {job} {phase}" in text
                   for job, text in zip(drawn["customdata"], drawn["hovertext"], strict=True))
    rows = page.evaluate("() => document.getElementById('jobs-chart')"
                         "._fullLayout.yaxis._categories")
    assert sorted(rows) == sorted({s["job_id"] for s in listed})  # one row per job, no other
    # hover the broken job's epilog marker, then click it
    epilog = trace(page, "jobs-chart", "epilog")
    i = epilog["customdata"].index("81240")
    at = page.evaluate(MARKER_CENTRE, ["jobs-chart", "epilog", i])
    page.mouse.move(at["x"], at["y"])
    wait_until(page, "() => (document.querySelector('#jobs-chart .hovertext') || {})"
                     ".textContent?.includes('job 81240 epilog')")
    page.mouse.click(at["x"], at["y"])
    wait_until(page, "() => document.querySelectorAll('#job-diff li').length > 0")
    api = fleet.api(f"/hosts/{HOST}/jobs/81240/diff")["changes"]
    assert diff_lines(page) == [f"{c['severity'].upper()} {c['text']}" for c in api]
    assert diff_lines(page)[0] == "CRITICAL GPU2 link 7 went down"
    assert page.locator("#job-diff li").first.get_attribute("class") == "v-down"
    assert page.locator('#job-chips [data-job="81240"]').get_attribute("aria-pressed") == "true"


def test_a_job_chip_shows_a_job_where_nothing_changed(page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    wait_for_host(fleet)
    open_view(page, f"/#/host/{HOST}", "host")
    page.locator('#job-chips [data-job="81247"]').click()
    wait_until(page, "() => (document.getElementById('job-diff').textContent || '')"
                     ".includes('job 81247')")
    assert diff_lines(page) == []
    assert "nothing changed on the fabric during this job" in page.locator("#job-diff").inner_text()


def test_a_host_without_jobs_shows_no_jobs_panel(page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    open_view(page, f"/#/host/{fleet.faulty}", "host")
    assert page.locator("#jobs-panel").is_hidden()
