"""Faults of the driver's own verdicts (probes/gpu_health.py), for the simulated fabric.

    GpuRecoveryAction(gpu=1, action="drain_p2p")  NVML's recovery action for GPU 1 turns to
                                                  drain P2P; the GPU logs Xid 154 saying so
    RowRemapPending(gpu=1)                        a row remap waits for the GPU's next reset
    RowRemapFailed(gpu=1)                         a remap failed (no spare row): an
                                                  uncorrected ECC error counted with it
    AerGrowth(gpu=1, kind="correctable")          the GPU's (or its bridge's) AER counter
                                                  grows on the fabric's clock

Kept apart from `faults.py` (which joins them into its `Fault` union) so the driver's
reads, their simulation (`simdriver.py`) and their faults read as one piece.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from peerwatch.probes.gpu_health import RECOVERY_ACTIONS


@dataclass(frozen=True)
class GpuRecoveryAction:
    """NVML reports `action` for `gpu` (and, with `xid`, the driver logs that Xid when it
    goes in: 154, "GPU recovery action changed")."""

    gpu: int
    action: str = "drain_p2p"
    xid: int | None = 154

    def __post_init__(self) -> None:
        if self.action not in RECOVERY_ACTIONS[1:]:
            raise ValueError(f"recovery action must be one of {RECOVERY_ACTIONS[1:]}, "
                             f"got {self.action!r}")


@dataclass(frozen=True)
class RowRemapPending:
    """`gpu` remapped a row for a corrected error; the remap waits for a GPU reset."""

    gpu: int


@dataclass(frozen=True)
class RowRemapFailed:
    """`gpu` could not remap a row (no spare left): an uncorrected ECC error with it."""

    gpu: int


@dataclass(frozen=True)
class AerGrowth:
    """`gpu`'s PCIe AER `kind` counter (its bridge's with `at_bridge`) grows by `per_second`
    on the fabric's clock; what was counted stays when the fault is cleared."""

    gpu: int
    kind: Literal["correctable", "nonfatal", "fatal"] = "correctable"
    per_second: float = 0.5
    at_bridge: bool = False

    def __post_init__(self) -> None:
        if self.per_second <= 0:
            raise ValueError(f"per_second must be positive, got {self.per_second}")


DriverFault = GpuRecoveryAction | RowRemapPending | RowRemapFailed | AerGrowth
