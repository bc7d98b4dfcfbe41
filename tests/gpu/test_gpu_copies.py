"""The per-GPU tests (h2d, d2h, local) on a real GPU: run on every GPU, also on a one-GPU host.

Plausibility bounds only (speed figures against nvbandwidth's method are bench/gpu/pcie.py's):
wide enough that a healthy host always passes, tight enough that wrong units, unverified
copies or a test that copies nothing fail.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from peerwatch.probes.budgets import DEFAULT_BUDGETS
from peerwatch.probes.errors import FabricUnavailable
from peerwatch.probes.nvidia.real import RealFabric
from peerwatch.probes.report import GPU_TESTS, TestName
from peerwatch.probes.sweep import SweepOptions, run_sweep

MiB = 1 << 20
# GB/s a healthy GPU of any recent generation stays within (PCIe gen3 x8 .. gen6 x16; HBM).
PLAUSIBLE = {TestName.H2D: (3e9, 130e9), TestName.D2H: (3e9, 130e9),
             TestName.LOCAL: (100e9, 10e12)}


@pytest.fixture(scope="module")
def fabric() -> Iterator[RealFabric]:
    pytest.importorskip("cupy")
    try:
        real = RealFabric()
        real.transfers()
    except FabricUnavailable as exc:
        pytest.skip(f"no GPU here: {exc}")
    yield real
    real.close()


@pytest.mark.parametrize("test", GPU_TESTS)
def test_each_gpu_measures_plausible_verified_figures(fabric: RealFabric,
                                                      test: TestName) -> None:
    low, high = PLAUSIBLE[test]
    for gpu in range(fabric.gpu_count()):
        m = fabric.measure(DEFAULT_BUDGETS[test].spec(test, gpu))
        assert m.verified, f"GPU{gpu} {test}: data did not verify"
        assert low < m.value < high, f"GPU{gpu} {test}: {m.value / 1e9:.1f} GB/s"
        assert len(m.samples) == DEFAULT_BUDGETS[test].samples
        assert 0 < m.gpu_time_s < 0.5
        assert m.wire_bytes == {gpu: 0}


def test_h2d_and_d2h_track_the_pcie_link(fabric: RealFabric) -> None:
    """Both directions cross the same trained link: within a factor of two of each other and
    below what the link carries raw (3.94 GB/s per gen5 lane, a lane half that per gen down)."""
    for gpu in range(fabric.gpu_count()):
        pcie = fabric.gpu(gpu).pcie
        h2d = fabric.measure(DEFAULT_BUDGETS[TestName.H2D].spec(TestName.H2D, gpu)).value
        d2h = fabric.measure(DEFAULT_BUDGETS[TestName.D2H].spec(TestName.D2H, gpu)).value
        assert 0.5 < h2d / d2h < 2.0
        if pcie.gen_current and pcie.width_current:
            raw = 3.938e9 * 2 ** (pcie.gen_current - 5) * pcie.width_current
            assert max(h2d, d2h) < raw * 1.05, f"faster than PCIe gen{pcie.gen_current}"


def test_the_sweep_measures_one_gpu_alone(fabric: RealFabric) -> None:
    outcome = run_sweep(fabric, SweepOptions(tests=GPU_TESTS, gpus=(0,), force=True))
    assert [(r.test, r.src, r.dst) for r in outcome.results] == [
        (t, 0, None) for t in GPU_TESTS]
    assert all(r.error is None and r.verified for r in outcome.results), outcome.results
    assert outcome.cost.gpu_time_s > 0
