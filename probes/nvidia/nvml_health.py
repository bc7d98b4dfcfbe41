"""One GPU's health as its driver says it, read through `Nvml` (`probes/gpu_health.py`).

Read through the session's `call` and `field_value` (so `nvml.py` stays the only importer of
pynvml). Each of the four reads stands alone: one the GPU does not offer is named in
`unread` as "not supported: <NVML's words>", one that failed as "failed: <why>", and the
rest still go out. What the calls are:

    recovery_action  field NVML_FI_DEV_GET_GPU_RECOVERY_ACTION (230; nvml.h R570+; the
                     bindings have no nvmlDeviceGetGpuRecoveryAction function, the field is
                     how NVML answers it), value nvmlDeviceGpuRecoveryAction_t
    ecc              nvmlDeviceGetTotalEccErrors(handle, corrected|uncorrected,
                     volatile|aggregate): four counts (not supported with ECC off)
    row_remap        nvmlDeviceGetRemappedRows: (corrected, uncorrected, pending, failure),
                     A100 and later
    retired_pages    nvmlDeviceGetRetiredPages per cause and ...PendingStatus: GPUs before
                     A100 (those with row remapping answer "not supported")
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from peerwatch.probes.errors import NotSupported, PeerwatchProbeError
from peerwatch.probes.gpu_health import (
    EccCounts,
    GpuDriverHealth,
    RetiredPages,
    RowRemap,
    recovery_action_name,
)
from peerwatch.probes.nvidia.nvml_session import NvmlSession

T = TypeVar("T")


def attempt(unread: dict[str, str], name: str, read: Callable[[], T]) -> T | None:
    """`read()`, or None with its reason put in `unread[name]`: "not supported" is a value."""
    try:
        return read()
    except NotSupported as exc:
        unread[name] = f"not supported: {exc}"[:300]
    except PeerwatchProbeError as exc:
        unread[name] = f"failed: {exc or type(exc).__name__}"[:300]
    return None


def recovery_action(nvml: NvmlSession, gpu: int) -> str:
    return recovery_action_name(nvml.field_value(gpu, "NVML_FI_DEV_GET_GPU_RECOVERY_ACTION"))


def ecc(nvml: NvmlSession, gpu: int) -> EccCounts:
    h, m, where = nvml.handle(gpu), nvml.module, f"nvml.ecc gpu={gpu}"
    corrected = getattr(m, "NVML_MEMORY_ERROR_TYPE_CORRECTED", 0)
    uncorrected = getattr(m, "NVML_MEMORY_ERROR_TYPE_UNCORRECTED", 1)
    volatile = getattr(m, "NVML_VOLATILE_ECC", 0)
    aggregate = getattr(m, "NVML_AGGREGATE_ECC", 1)

    def count(kind: int, counter: int) -> int:
        return int(nvml.call(where, "nvmlDeviceGetTotalEccErrors", h, kind, counter))

    return EccCounts(volatile_corrected=count(corrected, volatile),
                     volatile_uncorrected=count(uncorrected, volatile),
                     aggregate_corrected=count(corrected, aggregate),
                     aggregate_uncorrected=count(uncorrected, aggregate))


def row_remap(nvml: NvmlSession, gpu: int) -> RowRemap:
    corrected, uncorrected, pending, failure = nvml.call(
        f"nvml.row_remap gpu={gpu}", "nvmlDeviceGetRemappedRows", nvml.handle(gpu))
    return RowRemap(corrected_rows=int(corrected), uncorrected_rows=int(uncorrected),
                    pending=bool(pending), failure=bool(failure))


def retired_pages(nvml: NvmlSession, gpu: int) -> RetiredPages:
    h, m, where = nvml.handle(gpu), nvml.module, f"nvml.retired_pages gpu={gpu}"

    def pages(cause: str, default: int) -> int:
        found: Any = nvml.call(where, "nvmlDeviceGetRetiredPages", h, getattr(m, cause, default))
        return len(found)

    pending = nvml.maybe(where, "nvmlDeviceGetRetiredPagesPendingStatus", h)
    return RetiredPages(
        single_bit=pages("NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS", 0),
        double_bit=pages("NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR", 1),
        pending=None if pending is None else bool(int(pending)))


def read_driver_health(nvml: NvmlSession, gpu: int) -> GpuDriverHealth:
    """Every read of GPU `gpu`, each failing alone (BadProbeRequest for a GPU not there)."""
    nvml.handle(gpu)
    unread: dict[str, str] = {}
    return GpuDriverHealth(
        recovery_action=attempt(unread, "recovery_action", lambda: recovery_action(nvml, gpu)),
        ecc=attempt(unread, "ecc", lambda: ecc(nvml, gpu)),
        row_remap=attempt(unread, "row_remap", lambda: row_remap(nvml, gpu)),
        retired_pages=attempt(unread, "retired_pages", lambda: retired_pages(nvml, gpu)),
        unread=unread)
