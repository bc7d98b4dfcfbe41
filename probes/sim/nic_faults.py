"""Faults of a simulated host's RDMA NICs (probes/sim/simnics.py):

    NicPortFlapping(nic="mlx5_0", every_s=60)   the port goes down and retrains every minute:
                                                link_downed and link_error_recovery grow,
                                                the port reads ACTIVE between flaps
    NicSymbolErrors(nic="mlx5_0", per_second=5) symbol errors rise on the port (a dirty or
                                                failing cable/transceiver), a tenth of them
                                                as receive errors
    NicPortDown(nic="mlx5_0")                   the port is DOWN (phys_state Polling)
    NicRateDegraded(nic="mlx5_0", gbps=200)     the port trained below its rate (2X of 4X)
    NicPathSys(gpu=1)                           GPU 1's nearest NIC sits across the sockets:
                                                its PCIe path is SYS (GPUDirect RDMA poor)

`nic=None` is the host's first NIC. Kept apart from `faults.py` (which joins them into its
`Fault` union) so the NICs, their simulation and their faults read as one piece; the
cross-host network (leaf/spine, cables between hosts) builds on these NICs.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class NicPortFlapping:
    nic: str | None = None
    every_s: float = 60.0

    def __post_init__(self) -> None:
        if self.every_s <= 0:
            raise ValueError(f"every_s must be positive, got {self.every_s}")


@dataclass(frozen=True)
class NicSymbolErrors:
    nic: str | None = None
    per_second: float = 5.0

    def __post_init__(self) -> None:
        if self.per_second <= 0:
            raise ValueError(f"per_second must be positive, got {self.per_second}")


@dataclass(frozen=True)
class NicPortDown:
    nic: str | None = None


@dataclass(frozen=True)
class NicRateDegraded:
    nic: str | None = None
    gbps: float = 200.0


@dataclass(frozen=True)
class NicPathSys:
    gpu: int


NicFault = NicPortFlapping | NicSymbolErrors | NicPortDown | NicRateDegraded | NicPathSys
NIC_WIDE = (NicPortFlapping, NicSymbolErrors, NicPortDown, NicRateDegraded)
