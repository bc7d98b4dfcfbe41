"""The host page's RDMA NICs table: one row per port as the API judged it, with its state,
rate and counters; hgx8-01's mlx5_6 flaps in the demo (docs/network.md)."""

from __future__ import annotations

import time

import pytest

from tests.browser.conftest import Fleet, open_view, wait_until
from tests.browser.test_job_snapshots import wait_for_host

pytestmark = pytest.mark.browser

HOST = "hgx8-01"


def test_each_nic_port_is_a_row_with_its_verdict(page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    wait_for_host(fleet)
    deadline = time.monotonic() + 90
    while not (nics := fleet.api(f"/hosts/{HOST}")["nics"]) or not all(n["ports"] for n in nics):
        assert time.monotonic() < deadline, "the demo's NIC ports were never judged"
        time.sleep(1)
    open_view(page, f"/#/host/{HOST}", "host")
    wait_until(page, "() => !document.getElementById('nics-panel').hidden")
    wait_until(page, "() => document.querySelectorAll('#nics-panel tbody tr').length === 8")
    rows = {page.locator("#nics-panel tbody tr").nth(i).get_attribute("data-nic"): i
            for i in range(8)}
    assert set(rows) == {f"{n['name']}/{p['port']}" for n in nics for p in n["ports"]}
    text = page.locator('#nics-panel tbody tr[data-nic="mlx5_0/1"]').inner_text()
    assert "ACTIVE" in text and "400 Gb/s" in text and "InfiniBand" in text and "GPU0 PIX" in text
