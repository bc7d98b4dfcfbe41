"""Pick a fabric by name: the real GPUs, a simulated preset, or whichever is there.

    open_fabric("nvml")              the real backend; FabricUnavailable where there are no GPUs
    open_fabric("simulated:hgx8")    a simulated host (seed, hostname and clock apply)
    open_fabric("auto")              the real backend if it can run here, else simulated:h200x2,
                                     saying so through `on_fallback` (or the log)
    open_fabric("nvml", quick=True)  the real backend reading NVML only (job snapshots)
    open_real_or_refuse("auto")      what every command that posts or stores uses: `auto`
                                     means the real GPUs or FabricUnavailable, never made-up data

The real backend is imported only when asked for, so machines without NVML or CuPy (and the
whole CPU test suite) never load them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from peerwatch.probes.errors import BadProbeRequest, FabricUnavailable
from peerwatch.probes.fabric import Fabric
from peerwatch.probes.sim.presets import PRESET_NAMES

FALLBACK_PRESET = "h200x2"
SIMULATED = "simulated:"
log = logging.getLogger("peerwatch.probes")


def fabric_choices() -> list[str]:
    """Every value `open_fabric` accepts, for help texts and error messages."""
    return ["auto", "nvml", *(SIMULATED + p for p in PRESET_NAMES)]


def open_real(quick: bool = False) -> Fabric:
    """The NVML + CuPy backend (NVML only when `quick`); FabricUnavailable when this machine
    cannot run it."""
    try:
        from peerwatch.probes.nvidia.real import RealFabric  # NVML/CuPy: GPU hosts only

        fabric: Fabric = RealFabric(quick=quick)
    except ImportError as exc:  # probes.nvidia.real itself, or pynvml inside it
        raise FabricUnavailable(f"the real backend cannot load: {exc}") from exc
    return fabric


def open_real_or_refuse(spec: str, *, hostname: str | None = None,
                        quick: bool = False) -> Fabric:
    """The fabric `spec` names for a command whose numbers reach a server or a spool
    (`probe`, `snapshot --post/--spool`): `auto` is the real GPUs or an error, because a
    report of made-up numbers is worse than a refusal; a simulated host only when named."""
    if spec == "auto":
        try:
            return open_real(quick)
        except FabricUnavailable as exc:
            raise FabricUnavailable(
                f"no GPUs usable here ({exc}); to run without GPUs pass "
                "--fabric simulated:<preset>") from exc
    return open_fabric(spec, hostname=hostname, quick=quick)


def open_fabric(
    spec: str = "auto",
    *,
    seed: int = 0,
    hostname: str | None = None,
    clock: Callable[[], float] = time.monotonic,
    on_fallback: Callable[[str], None] | None = None,
    quick: bool = False,
) -> Fabric:
    """The fabric `spec` names; BadProbeRequest for a name that is none of `fabric_choices()`."""
    if spec.startswith(SIMULATED):
        from peerwatch.probes.sim.simulated import SimulatedFabric  # presets load when asked

        return SimulatedFabric(spec.removeprefix(SIMULATED), seed=seed, hostname=hostname,
                               clock=clock)
    if spec == "nvml":
        return open_real(quick)
    if spec == "auto":
        try:
            return open_real(quick)
        except FabricUnavailable as exc:
            message = (f"no GPUs usable here ({exc}); "
                       f"using the simulated fabric {SIMULATED}{FALLBACK_PRESET} instead")
            (on_fallback or log.warning)(message)
            return open_fabric(SIMULATED + FALLBACK_PRESET, seed=seed, hostname=hostname,
                               clock=clock)
    raise BadProbeRequest(f"unknown fabric {spec!r} (choose from: {', '.join(fabric_choices())})")
