"""The host page's per-GPU copies beside the pair matrix: every GPU's h2d, d2h and local as
the health answer has them, coloured by verdict, the hover naming figure, expected and basis;
the GPU whose host copies were slowed is the one drawn degraded."""

from __future__ import annotations

import pytest

from tests.browser.conftest import FAULTY, Fleet, open_view, screenshot

pytestmark = pytest.mark.browser

ORANGE, GREEN = "rgb(230, 159, 0)", "rgb(46, 196, 149)"  # degraded, healthy text (>= 4.5:1)


def test_per_gpu_copies_show_the_api_figures_and_verdicts(page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    open_view(page, f"/#/host/{FAULTY}", "host")
    table = page.locator('table[aria-label="Per-GPU copies"]')
    table.wait_for()
    health = fleet.api(f"/hosts/{FAULTY}/health")
    for gpu in health["gpus"]:
        for t in gpu["tests"]:
            cell = table.locator(f'td[data-gpu="{gpu["gpu"]}"][data-test="{t["test"]}"]')
            assert cell.get_attribute("data-verdict") == t["verdict"], (gpu["gpu"], t)
            text = cell.inner_text()
            assert (f"{t['value'] / 1e12:.2f} TB/s" if t["value"] >= 1e12
                    else f"{t['value'] / 1e9:.1f} GB/s") in text
            hover = cell.get_attribute("title") or ""
            assert t["reason"] in hover
            if t["expected"] is not None:
                assert t["expected_basis"] in hover
                assert f"expected {t['expected'] / 1e9:.1f} GB/s" in hover
    slow = {(g["gpu"], t["test"]) for g in health["gpus"] for t in g["tests"]
            if t["verdict"] == "degraded"}
    assert slow == {(6, "h2d"), (6, "d2h")}  # the injected HostCopySlow, nothing else
    h2d = table.locator('td[data-gpu="6"][data-test="h2d"]')
    ratio = next(t["ratio_expected"] for g in health["gpus"] if g["gpu"] == 6
                 for t in g["tests"] if t["test"] == "h2d")
    assert 0.35 < ratio < 0.45  # factor 0.4 of what the link offers
    assert h2d.inner_text().startswith("▲ ") and h2d.inner_text().endswith(f" {ratio:.2f}")
    assert "PCIe gen5 x16 (63.0 GB/s) x 0.88" in (h2d.get_attribute("title") or "")
    colour = h2d.evaluate("e => getComputedStyle(e).color")
    healthy = table.locator('td[data-gpu="0"][data-test="h2d"]').evaluate(
        "e => getComputedStyle(e).color")
    assert (colour, healthy) == (ORANGE, GREEN)
    screenshot(page, "host-gpu-copies")
