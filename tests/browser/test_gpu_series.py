"""Per GPU, the SM clock, power and temperature beside the bandwidth (issue 40, item 6): the
host page's chart draws what GET /hosts/{host}/gpus/series says, in the page's range, and
follows the other time charts' zoom."""

from __future__ import annotations

import time

import pytest

from tests.browser.conftest import FAULTY, Fleet, open_view, wait_until
from tests.browser.plotly import drag_zoom

pytestmark = pytest.mark.browser

TRACES = """() => document.getElementById('gpu-series-chart').data
  .filter(t => t.name.startsWith('GPU')).map(t => ({name: t.name, axis: t.yaxis || 'y',
    y: Array.from(t.y)}))"""


def test_gpu_clocks_power_and_temperature_are_drawn(page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + 90
    while not fleet.api(f"/hosts/{FAULTY}/gpus/series")["gpus"]:
        assert time.monotonic() < deadline, f"{FAULTY} sent no clocks sample"
        time.sleep(1)
    open_view(page, f"/#/host/{FAULTY}?range=6h", "host")
    wait_until(page, "() => document.getElementById('gpu-series-chart').dataset.ready === 'true'")
    api = fleet.api(f"/hosts/{FAULTY}/gpus/series")
    drawn = page.evaluate(TRACES)
    gpu0 = {t["axis"]: t["y"] for t in drawn if t["name"] == "GPU0"}
    first = api["gpus"][0]
    assert first["gpu"] == 0
    # the page loaded a moment before this answer: the drawn samples are its first ones
    assert gpu0["y"] == first["sm_clock_mhz"][:len(gpu0["y"])] and gpu0["y"]
    assert gpu0["y2"] == first["power_w"][:len(gpu0["y2"])]
    assert gpu0["y3"] == first["temperature_c"][:len(gpu0["y3"])]
    assert {t["name"] for t in drawn} == {f"GPU{g['gpu']}" for g in api["gpus"]}
    drag_zoom(page, "throughput-chart")
    wait_until(page, """() => {
      const r = id => JSON.stringify(document.getElementById(id).layout.xaxis.range);
      return r('gpu-series-chart') === r('throughput-chart'); }""")
