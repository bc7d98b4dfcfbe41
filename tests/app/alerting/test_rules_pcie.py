"""Per-GPU copies (h2d, d2h, local) judged on the simulated fabric, with a fake clock: what a
slow PCIe path looks like in the stored verdicts, the health answer and the alerts."""

from __future__ import annotations

import re

from peerwatch.app.analysis.verdict import Verdict
from peerwatch.app.queries.health import host_health
from peerwatch.app.queries.health_view import health_view
from peerwatch.probes.report import TestName
from peerwatch.probes.sim.faults import HostCopySlow, PcieDowntrained
from tests.app.alerting.simhost import SimHost

SWEEP_S = 300.0


def _gpu(host: SimHost, gpu: int):  # type: ignore[no-untyped-def]
    with host.sessions() as s:
        view = health_view(host_health(s, host.settings, host.hostname))
    return next(g for g in view.gpus if g.gpu == gpu)


def test_a_healthy_gpu_shows_its_pcie_figures_against_its_link(host: SimHost) -> None:
    host.step(SWEEP_S, "sweep")
    gpu = _gpu(host, 0)
    by_test = {t.test.value: t for t in gpu.tests}
    assert set(by_test) == {"h2d", "d2h", "local"}
    h2d = by_test["h2d"]
    assert h2d.verdict is Verdict.HEALTHY and 0.95 < (h2d.ratio_expected or 0) < 1.02
    assert h2d.expected_basis == "PCIe gen5 x16 (63.0 GB/s) x 0.88"
    assert h2d.value is not None and 53e9 < h2d.value < 56e9
    assert by_test["local"].expected is None and by_test["local"].value
    assert gpu.verdict is Verdict.HEALTHY


def test_slow_host_copies_on_a_full_link_degrade_the_gpu_and_page_once(host: SimHost) -> None:
    for _ in range(3):
        host.step(SWEEP_S, "sweep")
    host.inject(HostCopySlow(gpu=1, factor=0.4))
    host.step(SWEEP_S, "sweep")
    host.step(SWEEP_S, "sweep")
    assert "PCIeBandwidthDegraded" not in host.firing()  # low for 5 of the 10 min
    host.step(SWEEP_S, "sweep")
    gpu = _gpu(host, 1)
    assert gpu.verdict is Verdict.DEGRADED
    assert "GPU1 h2d 2" in gpu.reason and "of expected 55.4 GB/s (PCIe gen5 x16" in gpu.reason
    assert host.active() == {"PCIeBandwidthDegraded": {(("gpu", "1"), ("host", "sim-a"))}}
    [alert] = host.alerts("firing")
    assert alert.annotations["summary"] == (
        "GPU1 on sim-a: host <-> GPU copies are slow (d2h, h2d)")
    assert alert.value is not None and 0.35 < alert.value < 0.45
    assert _gpu(host, 0).verdict is Verdict.HEALTHY


def test_a_downtrained_link_measures_slow_and_is_judged_so(host: SimHost) -> None:
    """x8 gen4 of x16 gen5: h2d/d2h measure a quarter of what the slot offers; the GPU's
    reason names the figure, the expectation and how the link trained. PCIeLinkDowntrained
    is the page (PCIeBandwidthDegraded stays quiet: one fault, one page)."""
    host.step(SWEEP_S, "sweep")
    host.inject(PcieDowntrained(gpu=1, gen=4, width=8))
    for _ in range(4):
        host.step(SWEEP_S, "sweep")
    h2d = next(t for t in _gpu(host, 1).tests if t.test.value == "h2d")
    assert h2d.verdict is Verdict.DEGRADED and 0.2 < (h2d.ratio_expected or 1) < 0.3
    assert h2d.expected_basis == "PCIe gen5 x16 (63.0 GB/s) x 0.88; trained gen4 x8 now"
    assert re.search(r"GPU1 h2d 13\.\d GB/s is 0\.2\d of expected 55\.4 GB/s \(PCIe gen5 x16 "
                     r"\(63\.0 GB/s\) x 0\.88; trained gen4 x8 now\)", _gpu(host, 1).reason)
    assert set(host.firing()) == {"PCIeLinkDowntrained"}


def test_on_a_pcie_only_board_a_downtrained_gpu_pages_once_not_per_pair(
        sessions, sqlite_settings) -> None:  # type: ignore[no-untyped-def]
    """pcie4 (no NVLink): GPU2 trains x4 of x16 after a baseline was learnt. Every pair with
    GPU2 slows to what x4 carries and is judged below its baseline; the one page is GPU2's
    PCIeLinkDowntrained, not six P2PBandwidthDegraded (seen in the demo before the fix)."""
    host = SimHost(sessions, sqlite_settings, preset="pcie4")
    for _ in range(6):  # 5 samples make a baseline
        host.step(SWEEP_S, "sweep")
    host.inject(PcieDowntrained(gpu=2, width=4))
    for _ in range(5):
        host.step(SWEEP_S, "sweep")
    with host.sessions() as s:
        health = host_health(s, host.settings, host.hostname)
    slow_pairs = {(src, dst) for (src, dst, _), j in health.tests.items()
                  if src != dst and j.verdict is Verdict.DEGRADED}
    assert slow_pairs and all(2 in pair for pair in slow_pairs)  # judged: the pairs are slow
    # ... against what the slots offer, not the x4 they trained at (as for lost NVLinks)
    j = health.tests[(0, 2, TestName.CE_WRITE)]
    assert j.ratio_expected is not None and j.ratio_expected < 0.4, j.reason
    assert "; trained GPU2 gen4 x4 now)" in j.reason
    assert host.active() == {"PCIeLinkDowntrained": {(("field", "width"), ("gpu", "2"),
                                                      ("host", "sim-a"))}}
