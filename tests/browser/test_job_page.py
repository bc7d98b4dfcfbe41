"""Which job held each GPU, in the dashboard: the demo's h200x2-01 runs job 81255 on GPU0 and
GPU1 (its simulated agent reads the job mapping, app/demo/gpu_jobs.py). The pair's series
marks the job along the bottom and links to it beside the chart; the link opens
#/job/81255, whose tables are what GET /api/v1/jobs/81255 says."""

from __future__ import annotations

import time

import pytest

from tests.browser.axe import violations
from tests.browser.conftest import Fleet, open_view, wait_hash, wait_until
from tests.browser.plotly import annotations, trace

pytestmark = pytest.mark.browser

HOST, JOB = "h200x2-01", "81255"


def wait_job(fleet: Fleet, within_s: float = 90.0) -> None:
    deadline = time.monotonic() + within_s
    while True:
        try:
            fleet.api(f"/jobs/{JOB}")
            return
        except Exception:  # noqa: BLE001 - a 404 until the host's first report
            assert time.monotonic() < deadline, f"no report of {HOST} named job {JOB}"
            time.sleep(0.5)


def test_the_series_marks_the_job_and_links_to_its_page(page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    wait_job(fleet)
    open_view(page, f"/#/host/{HOST}?pair=0-1&range=1h", "host")
    wait_until(page, "() => (document.getElementById('series-chart').data || [])"
                     f".some(t => t.name === 'job {JOB}')")
    line = trace(page, "series-chart", f"job {JOB}")
    assert f"job {JOB} on GPU0, GPU1" in line["hovertext"]
    assert f"job {JOB}" in annotations(page, "series-chart")
    link = page.locator(f'#pair-panel .pair-jobs a[data-job="{JOB}"]')
    assert link.get_attribute("href") == f"#/job/{JOB}"
    link.click()
    wait_hash(page, f"#/job/{JOB}")
    page.wait_for_selector('main[data-ready="job"]')


def test_the_job_page_is_what_the_api_says(page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    wait_job(fleet)
    open_view(page, "/#/alerts", "alerts")
    with page.expect_response(lambda r: f"/api/v1/jobs/{JOB}" in r.url) as answer:
        open_view(page, f"/#/job/{JOB}", "job")
    api = answer.value.json()
    assert page.locator("h1").inner_text() == f"Job {JOB}"
    held = page.locator('table[aria-label="GPUs the job held"] tbody tr')
    assert held.evaluate_all("rs => rs.map(r => [r.dataset.host, Number(r.dataset.gpu)])") == [
        [s["host"], s["gpu"]] for s in api["held"]] == [[HOST, 0], [HOST, 1]]
    alerts = page.locator('table[aria-label="Alerts during the job"] tbody tr')
    verdicts = page.locator('table[aria-label="Verdicts during the job"] tbody tr')
    assert alerts.count() == len(api["alerts"]) and verdicts.count() == len(api["verdicts"])
    problems = len(api["alerts"]) + len(api["verdicts"])
    assert page.locator("[data-problems]").get_attribute("data-problems") == str(problems)
    page.wait_for_timeout(300)
    assert violations(page) == []  # axe: no critical or serious violation (as every view)
    page.locator('table[aria-label="GPUs the job held"] a.host').first.click()
    wait_hash(page, f"#/host/{HOST}")


def test_an_unknown_job_says_so(page, fleet: Fleet, browser_context) -> None:  # type: ignore[no-untyped-def]
    _, watch = browser_context
    open_view(page, "/#/fleet", "fleet")
    page.evaluate("() => { location.hash = '#/job/nosuchjob'; }")
    error = page.locator("#view-error")
    error.wait_for(state="visible")
    assert "job 'nosuchjob' not found" in error.inner_text()
    open_view(page, "/#/fleet", "fleet")  # leave the page before it asks again
    # Chromium logs the refused fetch as a console error: this 404 is the answer expected
    deadline = time.monotonic() + 10
    while not any("status of 404" in p for p in watch.problems) and time.monotonic() < deadline:
        page.wait_for_timeout(50)
    watch.problems[:] = [p for p in watch.problems if "status of 404" not in p]
