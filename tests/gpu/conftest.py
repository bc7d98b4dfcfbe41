"""The real backend on a real GPU host. Skipped (never failed, also in CI) where there is none.

CI machines have no GPU, so these tests skip there; run them on a GPU host with
`pytest tests/gpu` (bench/gpu/session.sh does so on the lent H200 pair).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from peerwatch.probes.errors import FabricUnavailable
from peerwatch.probes.nvidia.nvml import Nvml
from peerwatch.probes.nvidia.real import RealFabric


@pytest.fixture(scope="module")
def nvml() -> Iterator[Nvml]:
    """An NVML session alone (no CuPy, any number of GPUs): the one-GPU machine runs these."""
    try:
        session = Nvml()
    except FabricUnavailable as exc:
        pytest.skip(f"no GPU here: {exc}")
    yield session
    session.close()


@pytest.fixture(scope="session")
def fabric() -> Iterator[RealFabric]:
    pytest.importorskip("cupy")
    try:
        real = RealFabric()
    except FabricUnavailable as exc:
        pytest.skip(f"no GPU here: {exc}")
    try:
        real.transfers()
    except FabricUnavailable as exc:
        real.close()
        pytest.skip(f"CUDA is not usable here: {exc}")
    if real.gpu_count() < 2:
        real.close()
        pytest.skip("peer-to-peer tests need two GPUs")
    yield real
    real.close()
