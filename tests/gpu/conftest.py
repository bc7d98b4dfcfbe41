"""The real backend on a real GPU host. Skipped (never failed, also in CI) where there is none.

CI machines have no GPU, so these tests skip there; run them on a GPU host with
`pytest tests/gpu` (bench/gpu_session.sh does so on the lent H200 pair).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from probes.errors import FabricUnavailable
from probes.nvidia.real import RealFabric


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
