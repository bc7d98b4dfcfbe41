"""Which job held each GPU, in the dashboard: the demo's h200x2-01 runs job 81255 on GPU0 and
GPU1 (its simulated agent reads the job mapping, app/demo/gpu_jobs.py). The pair's series
marks the job along the bottom and links to it beside the chart; the link opens
#/job/81255, whose tables are what GET /api/v1/jobs/81255 says. Job 81240 on hgx8-01 raised no
alert, but its snapshots' diff says GPU2 link 7 went down: its page is not "nothing went
wrong" (issue 40)."""

from __future__ import annotations

import time

import pytest

from tests.browser.axe import violations
from tests.browser.conftest import Fleet, open_view, wait_hash, wait_until
from tests.browser.plotly import annotations, trace

pytestmark = pytest.mark.browser

HOST, JOB = "h200x2-01", "81255"


def wait_job(fleet: Fleet, job: str = JOB, within_s: float = 90.0) -> None:
    deadline = time.monotonic() + within_s
    while True:
        try:
            fleet.api(f"/jobs/{job}")
            return
        except Exception:  # noqa: BLE001 - a 404 until the host's first report
            assert time.monotonic() < deadline, f"no report named job {job}"
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
    timeline = page.locator('table[aria-label="Job timeline"] tbody tr')
    sources = timeline.evaluate_all("rs => rs.map(r => r.dataset.source)")
    assert sources.count("alert") == len(api["alerts"])
    assert sources.count("verdict") == len(api["verdicts"])
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


def test_a_job_whose_diff_shows_a_link_down_is_not_all_clear(page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    wait_job(fleet, "81240")
    diff = fleet.api("/hosts/hgx8-01/jobs/81240/diff")["changes"]
    assert diff[0]["text"] == "GPU2 link 7 went down"
    open_view(page, "/#/job/81240", "job")
    chip = page.locator("#job-verdict")
    assert "nothing went wrong" not in chip.inner_text()
    assert int(chip.get_attribute("data-problems") or 0) >= 2  # the link down, the replays
    rows = page.locator('table[aria-label="Job timeline"] tbody tr[data-source="snapshot diff"]')
    texts = rows.all_inner_texts()
    assert any("GPU2 link 7 went down" in t and "critical" in t for t in texts), texts
    assert len(texts) == len(diff)
    assert page.title() == "Job 81240 · peerwatch"
