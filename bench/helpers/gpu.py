"""What the GPU benchmarks share: the real fabric with CuPy started, or a reason to skip."""

from __future__ import annotations

from typing import TYPE_CHECKING

from peerwatch.probes.errors import FabricUnavailable

if TYPE_CHECKING:
    from peerwatch.probes.nvidia.real import RealFabric


def real_fabric_or_skip() -> RealFabric | None:
    """The real fabric, CuPy started; None (after saying why) where there is no GPU."""
    try:
        from peerwatch.probes.nvidia.real import RealFabric

        fabric = RealFabric()
        fabric.transfers()
    except FabricUnavailable as exc:
        print(f"skipped: no GPU here ({exc})")
        return None
    return fabric
